package dev.tally.spi;

import dev.tally.Decision;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The rule of {@link Store#limitAll}, written once for every store that runs limiters in Java: given
 * the records of every key, read together, decide all the calls at one instant and say whether the
 * store may write their outcomes.
 *
 * <p>Two phases, as {@code LimiterMachine} composes the limits of one key: every call is asked
 * before any consumes. A call that would allow, in a decision another call refused, is answered as
 * {@code decide(0)} answers: allowed, with its state unchanged; so each decision of a refused set
 * says both which limiters refused and what the others have left, and nothing in it counts permits
 * that were not taken.
 */
public final class JointLimit {
  private JointLimit() {}

  /**
   * The outcome of every call, in order, and whether all allowed: only then does the store write
   * them (each {@link LimiterOutcome#next()} under its key, kept for
   * {@link LimiterOutcome#keepNanos()}); otherwise it writes nothing.
   */
  public record Result(boolean allowed, LimiterOutcome[] outcomes) {
    /** The decisions, in the order of the calls. */
    public Decision[] decisions() {
      Decision[] d = new Decision[outcomes.length];
      for (int i = 0; i < d.length; i++) {
        d[i] = outcomes[i].decision();
      }
      return d;
    }
  }

  /**
   * Checks what {@link Store#limitAll} takes: at least one call, none null, no key twice (two
   * limiters on one key would each decide against the state before the other's consumption, and
   * the last write would drop the first's; one handle with both limits is what that means).
   *
   * @throws IllegalArgumentException otherwise
   */
  public static void check(List<? extends LimiterCall> calls, long permitsEach) {
    if (calls == null || calls.isEmpty()) {
      throw new IllegalArgumentException("a joint decision needs at least one limiter");
    }
    if (permitsEach < 0) {
      throw new IllegalArgumentException("permitsEach must be zero or more, not " + permitsEach);
    }
    Set<String> keys = new HashSet<>();
    for (LimiterCall c : calls) {
      if (c == null) {
        throw new IllegalArgumentException("a joint decision's limiters must not be null");
      }
      if (!keys.add(c.key())) {
        throw new IllegalArgumentException("limiter '" + c.key() + "' appears twice in one joint"
            + " decision; give each key once (one limiter can hold several limits)");
      }
    }
  }

  /**
   * Decides every call on its stored record at the store's {@code now}.
   *
   * @param stored each call's record as {@link LimiterCall#apply} takes it (null if none), by
   *     position; not modified
   */
  public static Result decide(List<? extends LimiterCall> calls, LimiterRecord[] stored, long now,
      long permitsEach) {
    int n = calls.size();
    LimiterOutcome[] out = new LimiterOutcome[n];
    boolean all = true;
    for (int i = 0; i < n; i++) {
      out[i] = calls.get(i).apply(copy(stored[i]), now, LimiterOperation.ACQUIRE, permitsEach);
      all &= out[i].decision().allowed();
    }
    if (!all) {
      for (int i = 0; i < n; i++) {
        if (out[i].decision().allowed()) {
          out[i] = calls.get(i).apply(copy(stored[i]), now, LimiterOperation.ACQUIRE, 0);
        }
      }
    }
    return new Result(all, out);
  }

  /** What a store without joint decisions throws. */
  public static UnsupportedOperationException unsupported(String store) {
    return new UnsupportedOperationException(store + " cannot decide several limiters atomically"
        + " (Tally.decide); the stores that can are mem:, file:, redis:, postgresql: and dynamodb:");
  }

  private static LimiterRecord copy(LimiterRecord r) {
    return r == null ? null : new LimiterRecord(r.decidedAt(), r.words().clone());
  }
}
