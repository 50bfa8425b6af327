package dev.tally;

import java.time.Instant;

/**
 * A leaky bucket with the interface of the DynamoDB leaky-bucket library Tally replaces: a
 * bucket of a given capacity that drains at a constant rate, to which callers {@link #add}.
 * Unlike that library, the capacity check and the add are one atomic step on the store, so
 * concurrent clients can never push it past its capacity.
 *
 * <pre>{@code
 * LeakyBucket bucket = tally.leakyBucket("my-bucket", 100, Duration.ofMinutes(1));
 * try {
 *   BucketState s = bucket.add(1);      // capacity, remaining, reset
 * } catch (BucketFullException full) {
 *   retryAt(full.state().reset());
 * }
 * }</pre>
 *
 * <p>{@link Tally#leakyBucket} finds or creates: if the store already holds this bucket, the
 * handle adopts its stored capacity, rate and level.
 *
 * <p><b>How the leak differs from the original.</b> The original bucket empties all at once:
 * its level stays until its reset instant, then drops to zero, so a bucket filled just before a
 * reset can take a full capacity again just after it (twice the capacity within moments). Tally's
 * bucket leaks continuously: {@code capacity} units drain evenly over the rate's duration, so
 * room comes back one unit at a time and no instant ever admits more than the capacity.
 * {@link #reset()} is therefore when the bucket will be empty, not when the level will drop.
 */
public interface LeakyBucket {

  /** The bucket's name. */
  String name();

  /** The capacity in force (the stored one, if the bucket existed). */
  long capacity();

  /**
   * Adds {@code amount} if it fits. {@code add(0)} always succeeds and changes nothing; an amount
   * larger than the capacity never fits.
   *
   * @throws BucketFullException if it does not fit; nothing is added
   */
  BucketState add(long amount);

  /** The current state, changing nothing. */
  BucketState state();

  /** How much can be added now (the original's {@code Remaining()}); changes nothing. */
  default long remaining() {
    return state().remaining();
  }

  /**
   * When the bucket will be empty if nothing more is added (the original's {@code Reset()}); it
   * does not forget the state: for that, reset the limiter of the same name.
   */
  default Instant reset() {
    return state().reset();
  }
}
