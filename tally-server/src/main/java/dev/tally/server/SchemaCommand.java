package dev.tally.server;

import dev.tally.jdbc.PostgresSchema;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/**
 * {@code tally schema}: prints (or, with {@code --apply}, runs) the DDL a PostgreSQL store or a
 * flush ledger needs. Tally never creates either when it opens: this is the one way in besides
 * running the printed file through one's own migrations.
 */
@Command(name = "schema", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Print the DDL of the PostgreSQL store named by --store (its table and limiter function),",
        "or with --ledger, of a flush ledger in the database named by --into. --apply runs it.",
        "  tally schema --store postgresql://app@db/app?table=tally --apply",
        "  tally schema --ledger tally_flush --into postgresql://app@db/app --apply"})
final class SchemaCommand implements Callable<Integer> {
  @ParentCommand
  TallyCommand root;

  @Option(names = "--ledger", paramLabel = "TABLE",
      description = "The flush ledger's table (e.g. tally_flush) instead of the store's schema.")
  String ledger;

  @Option(names = "--into", paramLabel = "URI", description = "With --ledger: the database (postgresql://...).")
  String into;

  @Option(names = "--apply", description = "Run the DDL (in one transaction) instead of printing it.")
  boolean apply;

  @Override
  public Integer call() {
    PrintWriter out = root.out();
    if (ledger != null) {
      if (into == null) {
        throw new IllegalArgumentException("--ledger needs --into postgresql://user@host/db, the database"
            + " that holds the tables counts are flushed into");
      }
      String ddl = PostgresSchema.ledgerDdl(ledger);
      if (apply) {
        PostgresSchema.applyLedgerTo(into, ledger);
        out.println("created ledger " + ledger);
      } else {
        out.print(ddl);
      }
      return 0;
    }
    if (!root.store.startsWith("postgresql:") && !root.store.startsWith("postgres:")) {
      throw new IllegalArgumentException("tally schema is for PostgreSQL stores (--store postgresql://...);"
          + " '" + root.store + "' needs no schema");
    }
    if (apply) {
      PostgresSchema.applyTo(root.store);
      out.println("created the Tally schema of " + root.store.replaceAll("//[^@/]*:[^@/]*@", "//***@"));
    } else {
      out.print(PostgresSchema.storeDdlFor(root.store));
    }
    return 0;
  }
}
