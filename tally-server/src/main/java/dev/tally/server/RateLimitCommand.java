package dev.tally.server;

import dev.tally.Durations;
import dev.tally.server.app.NamedLimitResult;
import dev.tally.server.app.Problem;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.Entry;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.server.ratelimit.Rule;
import dev.tally.server.ratelimit.Rules;
import dev.tally.server.ratelimit.RulesException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code tally ratelimit DOMAIN key=value[,key=value...] ... --rules FILE}: the named limits of a
 * rules file checked on the store directly, as {@code POST /v1/ratelimit/DOMAIN} and Envoy's
 * {@code ShouldRateLimit} check them.
 */
@Command(name = "ratelimit", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Check descriptors of a domain against rules files in envoyproxy/ratelimit's",
        "YAML format, taking --hits units (default 1) from each limit that matches and",
        "has room. One DESCRIPTOR per argument, its entries key=value joined by commas.",
        "Exit 0 when every descriptor is under its limit, 1 when one is over, 2 for a",
        "rules file it refuses, 3 for a domain no file defines (see docs/envoy.md)."})
final class RateLimitCommand implements Callable<Integer> {
  @ParentCommand
  TallyCommand root;

  @Parameters(index = "0", paramLabel = "DOMAIN", description = "The rules domain, e.g. envoy.")
  String domain;

  @Parameters(index = "1..*", arity = "1..*", paramLabel = "DESCRIPTOR",
      description = "key=value[,key=value...], e.g. remote_address=10.0.0.1 or"
          + " message_type=marketing,to_number=2061111111.")
  List<String> descriptors = new ArrayList<>();

  @Option(names = "--rules", paramLabel = "FILE_OR_DIR", required = true,
      description = "A rules file, or a directory of *.yaml rules files (repeatable).")
  List<Path> rules = new ArrayList<>();

  @Option(names = "--hits", paramLabel = "N", defaultValue = "1",
      description = "Units each matching limit takes (Envoy's hits_addend; default 1).")
  long hits;

  @Option(names = "--all-or-nothing",
      description = "Decide the descriptors all or nothing, as tally serve --rls-all-or-nothing.")
  boolean allOrNothing;

  @Override
  public Integer call() {
    Rules loaded;
    try {
      loaded = Rules.load(rules);
    } catch (RulesException e) {
      root.note("tally ratelimit: " + e.getMessage());
      return Problem.BAD_REQUEST.exitCode();
    }
    if (hits < 1 || hits > NamedLimits.MAX_UINT32) {
      root.note("tally ratelimit: --hits must be from 1 to " + NamedLimits.MAX_UINT32 + ", not " + hits);
      return Problem.BAD_REQUEST.exitCode();
    }
    List<Descriptor> parsed = new ArrayList<>();
    for (String d : descriptors) {
      parsed.add(descriptor(d));
    }
    return root.run(tally -> new NamedLimits(tally, loaded, allOrNothing),
        app -> app.rateLimit(domain, parsed, hits), RateLimitCommand::plain);
  }

  /** {@code a=1,b=2}: a descriptor of two entries; {@code a} alone is the entry a with no value. */
  static Descriptor descriptor(String text) {
    List<Entry> entries = new ArrayList<>();
    for (String part : text.split(",", -1)) {
      int eq = part.indexOf('=');
      String key = eq < 0 ? part : part.substring(0, eq);
      if (key.isEmpty()) {
        throw new IllegalArgumentException("descriptor '" + text + "' has an entry without a"
            + " key; write key=value[,key=value...], e.g. remote_address=10.0.0.1");
      }
      entries.add(new Entry(key, eq < 0 ? "" : part.substring(eq + 1)));
    }
    return new Descriptor(entries, null);
  }

  /** One line per descriptor: {@code OVER_LIMIT (a=1): 0 of 5 per day left, resets in 3600s}. */
  private static String plain(NamedLimitResult result) {
    StringBuilder b = new StringBuilder(result.outcome().overall().name());
    List<NamedLimits.Status> statuses = result.outcome().statuses();
    for (int i = 0; i < statuses.size(); i++) {
      NamedLimits.Status s = statuses.get(i);
      b.append('\n').append(s.code().name()).append(' ')
          .append(result.descriptors().get(i)).append(": ");
      Rule r = s.rule();
      if (r == null) {
        b.append("no rule matches");
        continue;
      }
      if (r.unlimited()) {
        b.append("unlimited (").append(r.path()).append(')');
        continue;
      }
      b.append(s.remaining()).append(" of ").append(r.requestsPerUnit()).append(" per ")
          .append(r.unit().name().toLowerCase(java.util.Locale.ROOT))
          .append(" left, resets in ")
          .append(Durations.format(Duration.ofMillis((s.resetNanos() + 999_999) / 1_000_000)))
          .append(" (").append(r.path())
          .append(r.shadowMode() ? ", shadow mode" : "").append(')');
    }
    return b.toString();
  }
}
