package dev.tally.internal;

import dev.tally.BucketFullException;
import dev.tally.BucketState;
import dev.tally.Decision;
import dev.tally.LeakyBucket;
import dev.tally.Limit;
import dev.tally.TimeSource;
import java.time.Instant;

/** {@link LeakyBucket} as a limiter of one {@link Limit#leakyBucket} limit. */
final class DefaultLeakyBucket implements LeakyBucket {
  private final DefaultRateLimiter limiter;
  private final TimeSource time;

  DefaultLeakyBucket(DefaultRateLimiter limiter, TimeSource time) {
    this.limiter = limiter;
    this.time = time;
  }

  @Override
  public String name() {
    return limiter.name();
  }

  @Override
  public long capacity() {
    return limiter.peek().limit();
  }

  @Override
  public BucketState add(long amount) {
    if (amount < 0) {
      throw new IllegalArgumentException("amount must be zero or more, not " + amount);
    }
    Decision d = limiter.decide(amount);
    BucketState state = state(d);
    if (!d.allowed()) {
      throw new BucketFullException(name(), amount, state);
    }
    return state;
  }

  @Override
  public BucketState state() {
    return state(limiter.peek());
  }

  private BucketState state(Decision d) {
    long now = time.nanos();
    long at = Arith.saturatedAdd(now, d.resetAfterNanos());
    return new BucketState(d.limit(), d.remaining(),
        Instant.ofEpochSecond(Math.floorDiv(at, 1_000_000_000L), Math.floorMod(at, 1_000_000_000L)));
  }

  @Override
  public String toString() {
    return "LeakyBucket[" + name() + "]";
  }
}
