package dev.tally.server;

import dev.tally.Durations;
import dev.tally.server.app.LimiterDecision;
import dev.tally.server.app.TallyApp;
import dev.tally.server.app.TallyApp.LimiterAction;
import dev.tally.LimitSpec;
import dev.tally.server.http.Reply;
import dev.tally.spi.LimiterRecord;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionStage;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code tally limit try|acquire|peek|refund|reset|reconfigure|top-up|reserve|settle|cancel NAME
 * --token-bucket 100/1m ...}: the limiter routes of the HTTP API, one subcommand each.
 */
@Command(
    name = "limit",
    description = {
        "Rate limiters shared by every process on the store.",
        "Give one or more limits; a request is granted only if every limit allows it.",
        "Exit 0 when allowed, 1 when denied."},
    mixinStandardHelpOptions = true,
    subcommandsRepeatable = false)
final class LimitCommand {
  @ParentCommand
  TallyCommand root;

  static class Limits {
    @Option(names = "--token-bucket", paramLabel = "[CAP:]N/PERIOD",
        description = "Token bucket: 100/1m (100, refilled at 100 a minute) or 10:1/1s.")
    List<String> tokenBucket = new ArrayList<>();

    @Option(names = "--leaky-bucket", paramLabel = "CAP/DRAIN",
        description = "Leaky bucket: 100/1m (100 deep, drains fully in a minute).")
    List<String> leakyBucket = new ArrayList<>();

    @Option(names = "--gcra", paramLabel = "BURST:COUNT/PERIOD",
        description = "GCRA as redis-cell's CL.THROTTLE: 15:30/60s.")
    List<String> gcra = new ArrayList<>();

    @Option(names = "--fixed-window", paramLabel = "N/WINDOW", description = "Fixed window: 100/1h.")
    List<String> fixedWindow = new ArrayList<>();

    @Option(names = "--sliding-window", paramLabel = "N/WINDOW", description = "Sliding window: 100/1h.")
    List<String> slidingWindow = new ArrayList<>();

    @Option(names = "--quota", paramLabel = "N/day|month[@ZONE]",
        description = "Calendar quota: 1000/month or 50/day@Europe/Paris (UTC by default).")
    List<String> quota = new ArrayList<>();

    // No defaultValue: picocli cannot print the help of a group (tally decide) holding one.
    @Option(names = "--limits-version", paramLabel = "N",
        description = {"The version of these limits (default 0: none). Stored limits of an older",
            "version are replaced by these, keeping what was consumed; of a newer or the same",
            "version, they decide. A note on stderr says when they differed."})
    long version;

    List<LimitSpec> specs() {
      if (version < 0 || version > LimiterRecord.MAX_LIMITS_VERSION) {
        throw new IllegalArgumentException("--limits-version must be from 0 to "
            + LimiterRecord.MAX_LIMITS_VERSION + " (2^45 - 1), not " + version);
      }
      List<LimitSpec> specs = new ArrayList<>();
      add(specs, LimitSpec.Kind.TOKEN_BUCKET, tokenBucket);
      add(specs, LimitSpec.Kind.LEAKY_BUCKET, leakyBucket);
      add(specs, LimitSpec.Kind.GCRA, gcra);
      add(specs, LimitSpec.Kind.FIXED_WINDOW, fixedWindow);
      add(specs, LimitSpec.Kind.SLIDING_WINDOW, slidingWindow);
      add(specs, LimitSpec.Kind.QUOTA, quota);
      if (specs.isEmpty()) {
        throw new IllegalArgumentException("give a limit, e.g. --token-bucket 100/1m");
      }
      return specs;
    }

    /** {@code app} giving these limits their {@code --limits-version}. */
    TallyApp on(TallyApp app) {
      return app.withLimitsVersion(version);
    }

    private static void add(List<LimitSpec> specs, LimitSpec.Kind kind, List<String> texts) {
      for (String t : texts) {
        String policy = specs.isEmpty() ? "default" : "limit-" + (specs.size() + 1);
        try {
          specs.add(LimitSpec.parse(kind, t, policy));
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException("--" + kind.optionName() + ": " + e.getMessage());
        }
      }
    }
  }

  private static final String NAME = "The limiter, e.g. api:user:42; - reads names from stdin,"
      + " one per line (-- - for a limiter named -).";

  /** What every subcommand takes: the limiter's name and its limits. */
  static class Limiter {
    @Parameters(paramLabel = "NAME", description = NAME)
    String name;

    @Mixin
    Limits limits;
  }

  /** What settle and cancel take: a limiter and the reservation on it to close. */
  static final class Reservation extends Limiter {
    @Option(names = "--id", paramLabel = "ID", required = true,
        description = "The reservation's id, as reserve printed it.")
    String id;
  }

  @SuppressWarnings("unused") // see run
  private static java.util.logging.Logger quietLimitsLog;

  /** A limiter call on one name, on the app giving the limits their version. */
  @FunctionalInterface
  private interface LimiterCall {
    CompletionStage<LimiterDecision> call(TallyApp app, String name, List<LimitSpec> specs);
  }

  private int run(Limiter limiter, LimiterCall call) {
    return run(limiter, call, true);
  }

  /**
   * Runs a limiter call on the limiter's name (or the names of stdin); with {@code noteDiffering},
   * a decision made by stored limits other than the ones given says so on stderr.
   */
  private int run(Limiter limiter, LimiterCall call, boolean noteDiffering) {
    Limits limits = limiter.limits;
    List<LimitSpec> specs = limits.specs();
    // The note below tells the user; the library's own log line about the same limits would say it
    // twice. Held in a field: java.util.logging forgets the level of a logger nobody references.
    quietLimitsLog = java.util.logging.Logger.getLogger("dev.tally.limits");
    quietLimitsLog.setLevel(java.util.logging.Level.OFF);
    return root.runEach(limiter.name, StdinArgument.What.NAMES, (app, n) -> call.call(limits.on(app), n, specs), d -> {
      root.note(note(d, noteDiffering));
      return plain(d);
    }, Reply::exitCode);
  }

  /**
   * What the stored limits did to this decision, for stderr: their version's note (the answer's
   * limitsMismatch and storedVersion), else with {@code noteDiffering} that other stored limits
   * decided (its storedLimits); null if neither.
   */
  static String note(LimiterDecision d, boolean noteDiffering) {
    String mismatch = versionNote(d);
    if (mismatch != null || !noteDiffering || !d.storedLimitsDiffer()) {
      return mismatch;
    }
    return "tally: note: limiter '" + d.name() + "' has stored limits that decided, not the ones"
        + " given; 'tally limit reconfigure' changes them";
  }

  /** What the stored limits' version did to this decision, or null if they agreed. */
  private static String versionNote(LimiterDecision d) {
    String m = d.limitsMismatch();
    if (m == null) {
      return null;
    }
    long stored = d.decision().storedVersion();
    String prefix = "tally: note: limiter '" + d.name() + "' ";
    return switch (m) {
      case "upgraded" -> prefix + "had limits of version " + stored + " stored; these, newer,"
          + " replaced them, keeping what was consumed";
      case "adopted" -> prefix + "has limits of a newer version (" + stored + ") stored; they"
          + " decided, not the ones given";
      default -> prefix + "has other limits stored under the same version (" + stored + ");"
          + " they decided, not the ones given: give changed limits a higher --limits-version";
    };
  }

  /** {@code allowed remaining=99 limit=100 reset-after=600ms}, and for a denial the wait. */
  static String plain(LimiterDecision d) {
    boolean allowed = d.decision().allowed();
    StringBuilder b = new StringBuilder(allowed ? "allowed" : "denied");
    b.append(" remaining=").append(d.decision().remaining());
    b.append(" limit=").append(d.decision().limit());
    if (!allowed) {
      b.append(" retry-after=").append(d.never() ? "never" : human(d.retryAfterMillis()));
    }
    b.append(" reset-after=").append(human(d.resetAfterMillis()));
    if (d.reservation() != null) {
      b.append(" reservation=").append(d.reservation());
    }
    return b.toString();
  }

  /** Milliseconds as 850ms or 2.5s, or from a minute on in whole seconds rounded up (30m, not 29m59.312s). */
  static String human(long millis) {
    return Durations.format(millis < 60_000 ? Duration.ofMillis(millis) : Duration.ofSeconds((millis + 999) / 1000));
  }

  @Command(name = "try", mixinStandardHelpOptions = true,
      description = "Take permits if every limit allows, else take nothing (exit 1).")
  int tryAcquire(
      @Mixin Limiter limiter,
      @Option(names = "--permits", paramLabel = "N", defaultValue = "1",
          description = "How many to take (default 1).") long permits) {
    return run(limiter, (app, n, specs) -> app.limiter(LimiterAction.TRY, n, specs, permits));
  }

  @Command(name = "acquire", mixinStandardHelpOptions = true,
      description = "Take permits, waiting up to --max-wait for them; exit 1 if they cannot be had in time.")
  int acquire(
      @Mixin Limiter limiter,
      @Option(names = "--permits", paramLabel = "N", defaultValue = "1",
          description = "How many to take (default 1).") long permits,
      @Option(names = "--max-wait", paramLabel = "DURATION", defaultValue = "0s",
          description = "The longest to wait, e.g. 2s (default 0s: do not wait).") Duration maxWait) {
    return run(limiter, (app, n, specs) -> app.acquire(n, specs, permits, maxWait));
  }

  @Command(name = "peek", mixinStandardHelpOptions = true,
      description = "Print what is available now, taking nothing.")
  int peek(@Mixin Limiter limiter) {
    return run(limiter, (app, n, specs) -> app.limiter(LimiterAction.PEEK, n, specs, 0));
  }

  @Command(name = "refund", mixinStandardHelpOptions = true,
      description = "Give back permits taken earlier, never beyond the limit.")
  int refund(
      @Mixin Limiter limiter,
      @Option(names = "--permits", paramLabel = "N", defaultValue = "1") long permits) {
    return run(limiter, (app, n, specs) -> app.limiter(LimiterAction.REFUND, n, specs, permits));
  }

  @Command(name = "reset", mixinStandardHelpOptions = true,
      description = "Forget the limiter's state: it is full again.")
  int reset(@Mixin Limiter limiter) {
    return run(limiter, (app, n, specs) -> app.limiter(LimiterAction.RESET, n, specs, 0));
  }

  @Command(name = "reconfigure", mixinStandardHelpOptions = true, description = {
      "Store these limits for the limiter, for every process, keeping what was consumed;",
      "print what is available under them."})
  int reconfigure(@Mixin Limiter limiter) {
    return run(limiter, (app, n, specs) -> app.limiter(LimiterAction.RECONFIGURE, n, specs, 0));
  }

  @Command(name = "top-up", mixinStandardHelpOptions = true, description = {
      "Add units to the current period of a quota (exactly one --quota); print what is",
      "available now."})
  int topUp(
      @Mixin Limiter limiter,
      @Option(names = "--units", paramLabel = "N", required = true,
          description = "How many units to add to this period (1 or more).") long units) {
    List<LimitSpec> specs = limiter.limits.specs();
    if (specs.size() != 1 || specs.get(0).kind() != LimitSpec.Kind.QUOTA) {
      // the HTTP API's message, with the command line's form of the example
      throw new IllegalArgumentException("top-up needs exactly one quota limit, e.g."
          + " --quota 1000/month");
    }
    // A top-up's answer has the period's larger limit, by the units just added: no news to note.
    return run(limiter, (app, n, given) -> app.limiter(LimiterAction.TOP_UP, n, given, units), false);
  }

  @Command(name = "reserve", mixinStandardHelpOptions = true, description = {
      "Take --estimate permits now and hold them until settled at the real cost ('tally limit",
      "settle'), cancelled, or until --ttl passes: then they stay taken. Prints the reservation's",
      "id (reservation=ID); with --op-id, the id is the operation id. Exit 1 when denied."})
  int reserve(
      @Mixin Limiter limiter,
      @Option(names = "--estimate", paramLabel = "N", required = true,
          description = "The permits the work may cost (1 or more).") long estimate,
      @Option(names = "--ttl", paramLabel = "DURATION", required = true,
          description = "How long the reservation may stay open, e.g. 5m (at most the store's"
              + " operation-id retention, 1h by default).") Duration ttl) {
    return run(limiter, (app, n, specs) -> app.reserve(n, specs, estimate, ttl));
  }

  @Command(name = "settle", mixinStandardHelpOptions = true, description = {
      "Close a reservation at its real cost: give back the surplus, or take the excess into the",
      "limiter's bounded debt. Exit 3 if it was settled at another amount, cancelled or expired."})
  int settle(
      @Mixin Reservation reservation,
      @Option(names = "--actual", paramLabel = "N", required = true,
          description = "What the work really cost (0 or more).") long actual) {
    return run(reservation, (app, n, specs) -> app.settle(n, specs, reservation.id, actual));
  }

  @Command(name = "cancel", mixinStandardHelpOptions = true, description = {
      "Give a reservation's whole estimate back (a settlement at 0). Exit 3 if it was settled,",
      "cancelled or expired."})
  int cancel(@Mixin Reservation reservation) {
    return run(reservation, (app, n, specs) -> app.settle(n, specs, reservation.id, 0));
  }
}
