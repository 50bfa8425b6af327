package dev.tally.dynamodb;

import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;

/**
 * When one store call must have ended: its start plus the store's {@code timeout}. Everything the
 * call does fits before it, whatever it meets: each request, the SDK's retries inside it, the
 * store's own re-sends and backoffs, and the wait for this process's turn on a limiter or a
 * transaction's keys. A call that holds several exchanges (an operation id's claim, then its
 * write) shares one deadline, so the timeout bounds what the caller waits, not each step.
 */
final class Deadline {
  /** The deadline of the blocking call this thread is in, for {@link DeadlineHttpClient}. */
  private static final ThreadLocal<Deadline> CURRENT = new ThreadLocal<>();

  private final long at; // System.nanoTime()
  private final Duration timeout;
  private final Duration attemptTimeout;
  /**
   * Whether a request went out: after that, a call cut short may have been applied. Reads count
   * too, which only makes the message more cautious than it need be.
   */
  private volatile boolean sent;

  private Deadline(long at, Duration timeout, Duration attemptTimeout) {
    this.at = at;
    this.timeout = timeout;
    this.attemptTimeout = attemptTimeout;
  }

  /** A deadline {@code options.timeout()} from now. */
  static Deadline start(Options options) {
    return new Deadline(System.nanoTime() + options.timeout().toNanos(), options.timeout(), options.attemptTimeout());
  }

  /** The deadline of the blocking call this thread is making, or null outside one. */
  static Deadline current() {
    return CURRENT.get();
  }

  /**
   * Makes this the thread's {@link #current()} deadline until {@link #release}, which restores
   * {@code previous} (a call made within another's, as the store's own reads inside a write).
   *
   * @return the deadline it replaces, to hand to {@link #release}
   */
  Deadline enter() {
    Deadline previous = CURRENT.get();
    CURRENT.set(this);
    return previous;
  }

  /** Ends what {@link #enter} began. */
  static void release(Deadline previous) {
    if (previous == null) {
      CURRENT.remove();
    } else {
      CURRENT.set(previous);
    }
  }

  long remainingNanos() {
    return at - System.nanoTime();
  }

  /**
   * {@code r} bounded by what is left: the SDK gives up on the whole request (with its own
   * retries) when the deadline comes. An attempt is cut short at {@code attemptTimeout} only
   * where a retry can follow it ({@code retryable}): elsewhere a shorter attempt would only fail
   * the call sooner, since a request that may have been applied is not sent again.
   *
   * @throws StoreTimeoutException if the deadline has passed
   */
  <R extends DynamoDbRequest> R bound(R r, boolean retryable, String key) {
    long left = remainingNanos();
    if (left <= 0) {
      throw expired(key);
    }
    sent = true;
    Duration call = Duration.ofNanos(left);
    Duration attempt = retryable && attemptTimeout.compareTo(call) < 0 ? attemptTimeout : call;
    AwsRequestOverrideConfiguration.Builder c = r.overrideConfiguration()
        .map(AwsRequestOverrideConfiguration::toBuilder)
        .orElseGet(AwsRequestOverrideConfiguration::builder);
    @SuppressWarnings("unchecked")
    R bounded = (R) r.toBuilder()
        .overrideConfiguration(c.apiCallTimeout(call).apiCallAttemptTimeout(attempt).build())
        .build();
    return bounded;
  }

  /**
   * Sleeps {@code nanos} (a backoff), or throws if the deadline comes first: a pause that would
   * end after it cannot lead to an answer in time.
   */
  void pause(long nanos, String key) {
    if (nanos <= 0) {
      return;
    }
    if (nanos >= remainingNanos()) {
      throw expired(key);
    }
    try {
      TimeUnit.NANOSECONDS.sleep(nanos);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreUnavailableException("interrupted while backing off", e);
    }
  }

  /**
   * Takes {@code lock}, this process's turn on {@code key} ({@code what}: e.g. "limiter"), waiting
   * no longer than the deadline.
   *
   * @throws StoreTimeoutException if other calls held it until then (nothing was applied)
   */
  void lock(Lock lock, String what, String key) {
    try {
      if (lock.tryLock(Math.max(0, remainingNanos()), TimeUnit.NANOSECONDS)) {
        return;
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new StoreUnavailableException("interrupted while waiting for this process's turn on " + what
          + " '" + key + "'; nothing was applied", e);
    }
    throw new StoreTimeoutException("other calls of this process held the turn on " + what + " '" + key
        + "' for the whole timeout (" + timeout.toMillis() + " ms); nothing was applied", null);
  }

  /** The failure of a call whose deadline passed between its requests. */
  StoreTimeoutException expired(String key) {
    return new StoreTimeoutException("DynamoDB did not finish the call" + (key == null ? "" : " on '" + key + "'")
        + " within its timeout ("
        + timeout.toMillis() + " ms); " + (sent ? "it may or may not have been applied"
        : "nothing was applied"), null);
  }
}
