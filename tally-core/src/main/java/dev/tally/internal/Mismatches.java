package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.TallyListener;
import java.lang.System.Logger.Level;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Reports decisions taken on stored limits other than the caller's ({@link Decision#mismatch()}):
 * every one to the listener (which counts them), and each kind once to the log.
 *
 * <p>A kind is the mismatch, the caller's limits and both versions: a configuration change that
 * has not reached every process shows up on every key it touches, and one line says all there is
 * to say about all of them. The set of kinds seen is bounded, so a process whose limits change
 * without end (a limit computed per key) logs the first {@value #MAX_KINDS} and then only counts.
 */
final class Mismatches {
  // A logger of its own, so that a front end that tells its user itself (the command line's note)
  // can quiet this one alone.
  private static final System.Logger LOG = System.getLogger("dev.tally.limits");
  private static final int MAX_KINDS = 1024;
  /** Reports nothing: for machines built outside a store (store tests). */
  static final Mismatches NONE = new Mismatches(null);

  private final TallyListener listener;
  private final Set<Kind> logged = ConcurrentHashMap.newKeySet();

  Mismatches(TallyListener listener) {
    this.listener = listener;
  }

  private record Kind(Decision.Mismatch mismatch, List<Limit> limits, long version, long storedVersion) {}

  /** How many lines were logged: one per kind of mismatch. */
  int linesLogged() {
    return logged.size();
  }

  void report(LimiterMachine machine, Decision d) {
    if (listener == null) {
      return;
    }
    try {
      listener.onLimitsMismatch(machine.key(), d.mismatch(), machine.limits(), machine.version(), d.storedVersion());
    } catch (RuntimeException listenerBug) {
      LOG.log(Level.ERROR, "TallyListener threw; ignoring", listenerBug);
    }
    Kind kind = new Kind(d.mismatch(), machine.limits(), machine.version(), d.storedVersion());
    if (logged.size() < MAX_KINDS && logged.add(kind)) {
      log(machine, d);
    }
  }

  private static void log(LimiterMachine m, Decision d) {
    long mine = m.version();
    long stored = d.storedVersion();
    List<Long> storedLimits = d.limits().stream().map(Decision.LimitState::limit).toList();
    String then = " Logged once for these limits and versions; tally.limiter.version.mismatch counts every call.";
    switch (d.mismatch()) {
      case UPGRADED -> LOG.log(Level.INFO, "rate limiter ''{0}'': its stored limits (version {1}) were"
          + " replaced by this process''s {2} (version {3}), keeping what was consumed; other keys"
          + " move on their next call from this version.{4}", m.key(), stored, m.limits(), mine, then);
      case ADOPTED -> LOG.log(Level.WARNING, "rate limiter ''{0}'': the stored limits (version {1},"
          + " limits {2}) are newer than this process''s {3} (version {4}) and apply instead. Deploy the"
          + " configuration of version {1} to this process.{5}", m.key(), stored, storedLimits, m.limits(),
          mine, then);
      case CONFLICT -> LOG.log(Level.WARNING, "rate limiter ''{0}'': the stored limits (limits {1})"
          + " differ from this process''s {2}, {3}; the stored ones apply. Give the configuration"
          + " that should win a higher version (RateLimiter.withVersion, or the rule''s version), or"
          + " make the two agree.{4}", m.key(), storedLimits, m.limits(),
          mine == 0 ? "and neither has a version" : "both of version " + mine, then);
      default -> throw new AssertionError(d.mismatch());
    }
  }
}
