package dev.tally.server;

import dev.tally.Tally;
import dev.tally.jdbc.Flush;
import dev.tally.jdbc.FlushResult;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/** {@code tally flush}: one exactly-once run of {@link Flush}; its exit codes are the description's. */
@Command(name = "flush", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Move the counts under --prefix from the store into a database table, exactly once:",
        "a flush killed at any instant and run again loses nothing and applies nothing twice.",
        "  tally flush --prefix views:episode: --into postgresql://app@db/app \\",
        "      --sql 'UPDATE episodes SET views = views + :count WHERE id = :suffix::bigint'",
        "In --sql, :count is the count, :key the full key, :suffix the key without the prefix.",
        "The ledger table must exist: tally schema --ledger tally_flush --into URI --apply.",
        "Exit: 0 flushed, 2 bad input, 4 a store or the database failed (what committed stays),",
        "6 another flusher holds the prefix (nothing changed: run it again later)."})
final class FlushCommand implements Callable<Integer> {
  @ParentCommand
  TallyCommand root;

  @Option(names = "--prefix", required = true, paramLabel = "PREFIX", description = "The keys to flush.")
  String prefix;

  @Option(names = "--into", required = true, paramLabel = "URI", description = "The database: postgresql://...")
  String into;

  @Option(names = "--sql", required = true, paramLabel = "STATEMENT",
      description = "The statement each count goes through, with :count, :key, :suffix.")
  String sql;

  @Option(names = "--ledger", paramLabel = "TABLE", defaultValue = "tally_flush",
      description = "The ledger table (default tally_flush).")
  String ledger;

  @Option(names = "--batch", paramLabel = "KEYS", defaultValue = "1000", description = "Keys per batch (default 1000).")
  int batch;

  @Option(names = "--retention", paramLabel = "DURATION", defaultValue = "1h",
      description = "The store's operation-id retention (default 1h); also what the store keeps ids for.")
  Duration retention;

  @Override
  public Integer call() {
    PrintWriter out = root.out();
    try (Tally tally = Tally.builder(root.store).operationRetention(retention).build()) {
      Flush flush = Flush.from(tally, prefix).into(into, sql).ledger(ledger).batchSize(batch)
          .retention(retention).build();
      try {
        FlushResult r = flush.run();
        out.println("flushed " + r.total() + " from " + r.keys() + " keys in " + r.batches() + " batches"
            + (r.resumed() > 0 ? ", after finishing " + r.resumed() + " interrupted ones" : "")
            + (r.unmatched() > 0 ? "; " + r.unmatched() + " keys matched no row (recorded in " + ledger + ")" : ""));
        return 0;
      } finally {
        flush.close();
      }
    }
  }
}
