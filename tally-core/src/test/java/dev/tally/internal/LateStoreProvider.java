package dev.tally.internal;

import dev.tally.StoreUnavailableException;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@code late:} — a {@code mem:} store that cannot be opened while {@link #up} is false, the way a
 * network store's opening fails during an outage; {@link #openings} counts every attempt, and
 * {@link #slow} holds one up.
 */
public final class LateStoreProvider implements StoreProvider {
  static volatile boolean up;
  static final AtomicInteger openings = new AtomicInteger();
  /** When set, an opening counts down {@link #opening} and then waits for this, as a slow connection would. */
  static volatile CountDownLatch slow;
  static volatile CountDownLatch opening = new CountDownLatch(0);

  /** For {@code ServiceLoader}. */
  public LateStoreProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("late");
  }

  @Override
  public Store open(String uri, StoreContext context) {
    openings.incrementAndGet();
    CountDownLatch wait = slow;
    if (wait != null) {
      opening.countDown();
      try {
        wait.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new StoreUnavailableException("interrupted while connecting to " + uri, e);
      }
    }
    if (!up) {
      throw new StoreUnavailableException("cannot connect to " + uri + ": connection refused", null);
    }
    return new MemoryStore(context.timeSource(), context.operationRetentionNanos());
  }
}
