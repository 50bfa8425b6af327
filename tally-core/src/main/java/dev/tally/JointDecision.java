package dev.tally;

import java.time.Duration;
import java.util.List;
import java.util.Objects;

/**
 * The answer of {@link Tally#decide(List, long)}: whether every limiter granted (and so every one
 * consumed), and each limiter's own {@link Decision}, in the order the limiters were given.
 *
 * <p>When refused, nothing was taken from any limiter. The refusing limiters' decisions are
 * refusals with their retry-after; the others' say {@code allowed} with the state unchanged (what
 * {@code decide(0)} reports), so their remaining counts no permit of this request.
 */
public final class JointDecision {
  private final List<String> names;
  private final List<Decision> decisions;
  private final int refused;

  /** Each limiter's name and decision, by position (stores and test doubles build these). */
  public JointDecision(List<String> names, List<Decision> decisions) {
    if (names.size() != decisions.size() || names.isEmpty()) {
      throw new IllegalArgumentException("one decision per limiter, at least one: " + names.size()
          + " names, " + decisions.size() + " decisions");
    }
    this.names = List.copyOf(names);
    this.decisions = List.copyOf(decisions);
    int first = -1;
    for (int i = 0; i < decisions.size() && first < 0; i++) {
      if (!Objects.requireNonNull(decisions.get(i), "decision").allowed()) {
        first = i;
      }
    }
    this.refused = first;
  }

  /** Whether every limiter granted the permits (and each consumed them). */
  public boolean allowed() {
    return refused < 0;
  }

  /** Each limiter's decision, in the order given. */
  public List<Decision> decisions() {
    return decisions;
  }

  /** Limiter {@code index}'s decision. */
  public Decision decision(int index) {
    return decisions.get(index);
  }

  /** The limiters' names, in the order given. */
  public List<String> names() {
    return names;
  }

  /** The position of the first limiter that refused, or -1 when all granted. */
  public int refusedIndex() {
    return refused;
  }

  /** The name of the first limiter that refused, or null when all granted. */
  public String refusedBy() {
    return refused < 0 ? null : names.get(refused);
  }

  /**
   * The index, among the refusing limiter's limits, of the limit that refused it (its
   * {@link Decision#limitIndex()}), or -1 when all granted.
   */
  public int refusingLimitIndex() {
    return refused < 0 ? -1 : decisions.get(refused).limitIndex();
  }

  /**
   * How long until every limiter could grant the request, as far as each says now: the longest
   * retry-after among the refusals ({@link Decision#NEVER} if one never will), 0 when allowed.
   */
  public long retryAfterNanos() {
    long wait = 0;
    for (Decision d : decisions) {
      if (!d.allowed()) {
        wait = Math.max(wait, d.retryAfterNanos());
      }
    }
    return wait;
  }

  /** {@link #retryAfterNanos()} as a duration. */
  public Duration retryAfter() {
    return Duration.ofNanos(retryAfterNanos());
  }

  /** The smallest {@link Decision#remaining()} of all the limiters. */
  public long remaining() {
    long r = Long.MAX_VALUE;
    for (Decision d : decisions) {
      r = Math.min(r, d.remaining());
    }
    return r;
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof JointDecision j && names.equals(j.names) && decisions.equals(j.decisions);
  }

  @Override
  public int hashCode() {
    return names.hashCode() * 31 + decisions.hashCode();
  }

  @Override
  public String toString() {
    StringBuilder b = new StringBuilder(allowed() ? "JointDecision[allowed" : "JointDecision[refused by '"
        + refusedBy() + "'");
    for (int i = 0; i < names.size(); i++) {
      b.append(", ").append(names.get(i)).append('=').append(decisions.get(i));
    }
    return b.append(']').toString();
  }
}
