package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.AsyncCounters;
import dev.tally.CircuitBreaker;
import dev.tally.CounterOverflowException;
import dev.tally.Counters;
import dev.tally.Decision;
import dev.tally.FailurePolicy;
import dev.tally.KeyNotFoundException;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import dev.tally.StoreUnavailableException;
import dev.tally.Tally;
import dev.tally.TallyListener;
import dev.tally.internal.OutageStoreProvider.Mode;
import dev.tally.internal.OutageStoreProvider.OutageStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The circuit breaker, through the public API over a store that can be taken down. Time is a
 * manual clock: nothing here sleeps. The probe runs on the runtime's own executor, so a test that
 * needs it to end after the call that started it holds it in the store ({@link #probe}); the
 * probe's cases with an executor in the test's hands are in {@link CircuitProbeTest}.
 */
class CircuitBreakerTest {
  private static final Duration OPEN_FOR = Duration.ofSeconds(1);
  private static final CircuitBreaker THREE = CircuitBreaker.of(3, OPEN_FOR);

  private final AtomicLong now = new AtomicLong(1_700_000_000_000_000_000L);
  private final List<String> transitions = Collections.synchronizedList(new ArrayList<>());
  private final List<String> policyAnswers = Collections.synchronizedList(new ArrayList<>());
  private final AtomicInteger rejected = new AtomicInteger();
  private final List<Tally> opened = new ArrayList<>();

  private final TallyListener listener = new TallyListener() {
    @Override
    public void onCircuitOpened(String store, Throwable cause, Duration openFor) {
      transition("opened " + store + " for " + openFor + ": " + cause.getMessage());
    }

    @Override
    public void onCircuitClosed(String store) {
      transition("closed " + store);
    }

    @Override
    public void onCircuitRejected(String store) {
      rejected.incrementAndGet();
    }

    @Override
    public void onFailurePolicyApplied(String op, String key, FailurePolicy policy, StoreException cause) {
      policyAnswers.add(policy + " " + op + ": " + cause.getMessage());
    }
  };

  private void transition(String t) {
    synchronized (transitions) { // the synchronized list's own lock
      transitions.add(t);
      transitions.notifyAll();
    }
  }

  /** Waits (at most 10 s) until {@code n} transitions have been seen: a probe ends on its own thread. */
  private void awaitTransitions(int n) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    synchronized (transitions) {
      for (long left; transitions.size() < n && (left = deadline - System.nanoTime()) > 0; ) {
        TimeUnit.NANOSECONDS.timedWait(transitions, left);
      }
    }
    assertThat(transitions).hasSizeGreaterThanOrEqualTo(n);
  }

  /**
   * The probe due, {@code call} starts it and is refused at once while the probe is held in the
   * store; then the probe is let go, and this waits until it has made the circuit's
   * {@code transitionsAfter}th transition.
   */
  private void probe(OutageStore store, ThrowingCallable call, int transitionsAfter) throws InterruptedException {
    CountDownLatch release = new CountDownLatch(1);
    store.entered = new CountDownLatch(1);
    store.gate = release;
    int called = store.calls.get();
    try {
      assertThatThrownBy(call).satisfies(e -> assertThat(e instanceof CompletionException ? e.getCause() : e)
          .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("a probe of the store is in flight"));
      assertThat(store.entered.await(10, TimeUnit.SECONDS)).as("the probe reached the store").isTrue();
      assertThat(store.read).last().isEqualTo(Circuit.PROBE_KEY);
      assertThat(store.calls).as("the probe, not the call").hasValue(called + 1);
    } finally {
      store.gate = null;
      release.countDown();
    }
    awaitTransitions(transitionsAfter);
  }

  private Tally open(String uri, CircuitBreaker breaker) {
    Tally t = Tally.builder(uri).timeSource(now::get).listener(listener).circuitBreaker(breaker).build();
    opened.add(t);
    return t;
  }

  private static OutageStore store(Tally t) {
    return (OutageStore) ((TallyRuntime) t).store();
  }

  private void advance(Duration d) {
    now.addAndGet(d.toNanos());
  }

  /** Fails {@code n} increments of {@code c} on a store that is down. */
  private static void fail(Counters c, int n) {
    for (int i = 0; i < n; i++) {
      assertThatThrownBy(() -> c.incr("k")).isInstanceOf(StoreUnavailableException.class)
          .hasMessage("connection refused");
    }
  }

  /** A tally over {@code outage:} whose circuit has just opened after three failures. */
  private Tally openCircuit() {
    Tally t = open("outage:", THREE);
    store(t).mode = Mode.DOWN;
    fail(t.counters(), 3);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
    return t;
  }

  @AfterEach
  void closeAll() {
    opened.forEach(Tally::close);
  }

  @Test
  void theThresholdOpensItAndThenNoCallReachesTheStore() {
    Tally t = open("outage:", THREE);
    OutageStore store = store(t);
    store.mode = Mode.DOWN;
    fail(t.counters(), 2);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
    fail(t.counters(), 1);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThat(store.calls).hasValue(3);

    for (int i = 0; i < 10; i++) {
      assertThatThrownBy(() -> t.counters().incr("k"))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("circuit of the outage store is open")
          .hasMessageContaining("not sent")
          .hasMessageContaining("3 calls in a row failed")
          .hasMessageContaining("the next probe is in 1000 ms")
          .hasMessageContaining("connection refused");
    }
    advance(Duration.ofMillis(600));
    assertThatThrownBy(() -> t.counters().get("k")).hasMessageContaining("the next probe is in 400 ms");
    assertThat(store.calls).hasValue(3);
    assertThat(rejected).hasValue(11);
    assertThat(transitions).containsExactly("opened outage for PT1S: connection refused");
  }

  @Test
  void timeoutsCountAsFailures() {
    Tally t = open("outage:", THREE);
    store(t).mode = Mode.TIMEOUT;
    for (int i = 0; i < 3; i++) {
      assertThatThrownBy(() -> t.counters().incr("k")).hasMessage("no answer within 2 s");
    }
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
  }

  @Test
  void anAnswerEndsTheRunOfFailures() {
    Tally t = open("outage:", THREE);
    OutageStore store = store(t);
    for (int round = 0; round < 3; round++) {
      store.mode = Mode.DOWN;
      fail(t.counters(), 2);
      store.mode = Mode.UP;
      t.counters().incr("k");
    }
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(transitions).isEmpty();
  }

  @Test
  void inputErrorsAndTheStoresRefusalsAreAnswersNotFailures() {
    Tally t = open("outage:", CircuitBreaker.of(1, OPEN_FOR));
    OutageStore store = store(t);
    Counters c = t.counters();
    c.put("max", Long.MAX_VALUE);
    c.put("floating", 1.5, Duration.ofHours(1));
    for (int i = 0; i < 5; i++) {
      assertThatThrownBy(() -> c.incrExisting("missing", 1)).isInstanceOf(KeyNotFoundException.class);
      assertThatThrownBy(() -> c.incr("max")).isInstanceOf(CounterOverflowException.class);
      assertThatThrownBy(() -> c.incr("floating")).isInstanceOf(dev.tally.NotAnIntegerException.class);
      assertThatThrownBy(() -> c.incr("")).isInstanceOf(IllegalArgumentException.class);
    }
    RateLimiter l = t.limiter("l", Limit.tokenBucket(1, Duration.ofHours(1)));
    assertThat(l.tryAcquire()).isTrue();
    assertThat(l.tryAcquire()).isFalse(); // a denial is an answer too
    assertThatThrownBy(() -> c.incr("l")).isInstanceOf(dev.tally.WrongKindException.class);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(transitions).isEmpty();
    assertThat(store.calls.get()).isGreaterThan(15);
  }

  @Test
  void failurePoliciesAnswerAtOnceWhileItIsOpen() {
    Tally t = openCircuit();
    OutageStore store = store(t);
    Counters views = t.counters("views", FailurePolicy.FAIL_OPEN);
    assertThat(views.incr("episode:512", 1, 10)).isEqualTo(11);
    assertThat(views.get("episode:512")).isEmpty();

    RateLimiter api = t.limiter("api", Limit.tokenBucket(10, Duration.ofSeconds(1)));
    assertThat(api.withFailurePolicy(FailurePolicy.FAIL_OPEN).tryAcquire()).isTrue(); // the shortcut
    assertThat(api.withFailurePolicy(FailurePolicy.FAIL_OPEN).decide(1).allowed()).isTrue();
    Decision closed = api.withFailurePolicy(FailurePolicy.FAIL_CLOSED).decide(1);
    assertThat(closed.allowed()).isFalse();
    assertThat(api.withFailurePolicy(FailurePolicy.FAIL_CLOSED).tryAcquire()).isFalse();
    assertThatThrownBy(api::tryAcquire).isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("circuit of the outage store is open");
    assertThatThrownBy(() -> t.counters("quota", FailurePolicy.FAIL_CLOSED).incr("k"))
        .isInstanceOf(StoreUnavailableException.class).hasMessageContaining("circuit");

    assertThat(store.calls).hasValue(3);
    assertThat(policyAnswers).hasSize(6).allSatisfy(a -> assertThat(a).contains("circuit"));
    assertThat(policyAnswers.get(0)).startsWith("FAIL_OPEN incr: ");
  }

  @Test
  void afterOpenForACallStartsOneProbeInTheBackgroundAndItsAnswerClosesIt() throws Exception {
    Tally t = openCircuit();
    OutageStore store = store(t);
    advance(OPEN_FOR.minusNanos(1));
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
    advance(Duration.ofNanos(1));
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.HALF_OPEN);
    store.mode = Mode.UP;
    probe(store, () -> t.counters().incr("k"), 2);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(t.counters().incr("k")).as("the refused call counted nothing").isEqualTo(1);
    assertThat(t.counters().incr("k")).isEqualTo(2);
    assertThat(store.calls).hasValue(6);
    assertThat(transitions).containsExactly("opened outage for PT1S: connection refused", "closed outage");
  }

  @Test
  void aFailedProbeReopensItForAnotherOpenFor() throws Exception {
    Tally t = openCircuit();
    OutageStore store = store(t);
    advance(OPEN_FOR);
    store.mode = Mode.TIMEOUT;
    probe(store, () -> t.counters().incr("k"), 2);
    assertThat(store.calls).hasValue(4);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThatThrownBy(() -> t.counters().incr("k")).hasMessageContaining("a probe failed")
        .hasMessageContaining("next probe is in 1000 ms").hasMessageContaining("no answer within 2 s");
    advance(OPEN_FOR.minusMillis(1));
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThatThrownBy(() -> t.counters().incr("k")).hasMessageContaining("next probe is in 1 ms");
    advance(Duration.ofMillis(1));
    store.mode = Mode.UP;
    probe(store, () -> t.counters().incr("k"), 3);
    t.counters().incr("k");
    assertThat(store.calls).as("three failures, two probes, one call").hasValue(6);
    assertThat(transitions).containsExactly("opened outage for PT1S: connection refused",
        "opened outage for PT1S: no answer within 2 s", "closed outage");
  }

  @Test
  void aProbeThatEndsInABugClosesIt() throws Exception {
    Tally t = openCircuit();
    OutageStore store = store(t);
    advance(OPEN_FOR);
    store.mode = Mode.BUG;
    probe(store, () -> t.counters().incr("k"), 2);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThatThrownBy(() -> t.counters().incr("k")).isInstanceOf(IllegalStateException.class);
    store.mode = Mode.UP;
    t.counters().incr("k");
    assertThat(store.calls).hasValue(6);
    assertThat(transitions).containsExactly("opened outage for PT1S: connection refused", "closed outage");
  }

  @Test
  void aClockSetBackPastTheOpeningLetsAProbeThroughAtOnce() {
    Tally t = openCircuit();
    now.addAndGet(-Duration.ofHours(1).toNanos());
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.HALF_OPEN);
  }

  @Test
  void concurrentCallersStartExactlyOneProbeAndAreAllRefusedAtOnce() throws Exception {
    Tally t = openCircuit();
    OutageStore store = store(t);
    advance(OPEN_FOR);
    store.mode = Mode.UP;
    CountDownLatch gate = new CountDownLatch(1);
    store.gate = gate;
    int threads = 8;
    CountDownLatch start = new CountDownLatch(1);
    CountDownLatch refused = new CountDownLatch(threads);
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> calls = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        calls.add(pool.submit(() -> {
          start.await();
          try {
            t.counters().incr("k");
          } catch (StoreUnavailableException e) {
            assertThat(e).hasMessageContaining("a probe of the store is in flight");
            refused.countDown();
          }
          return null;
        }));
      }
      start.countDown();
      assertThat(store.entered.await(10, TimeUnit.SECONDS)).isTrue();
      // Every caller is refused while the probe is held in the store: none waits for it.
      assertThat(refused.await(10, TimeUnit.SECONDS)).isTrue();
      for (Future<?> f : calls) {
        f.get(10, TimeUnit.SECONDS);
      }
      assertThat(store.calls).hasValue(4);
      assertThat(store.read).containsExactly(Circuit.PROBE_KEY);
      assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.HALF_OPEN);
    } finally {
      store.gate = null;
      gate.countDown();
      pool.shutdownNow();
    }
    awaitTransitions(2);
    assertThat(store.calls).hasValue(4);
    assertThat(t.counters().get("k")).isEmpty();
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(transitions).containsExactly("opened outage for PT1S: connection refused", "closed outage");
  }

  @Test
  void failuresOnManyThreadsOpenItOnceAndThenStopReachingTheStore() throws Exception {
    Tally t = open("outage:", THREE);
    OutageStore store = store(t);
    store.mode = Mode.DOWN;
    Counters views = t.counters("views", FailurePolicy.FAIL_OPEN);
    int threads = 8;
    int perThread = 200;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> runs = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        runs.add(pool.submit(() -> {
          start.await();
          for (int j = 0; j < perThread; j++) {
            assertThat(views.incr("k")).isEqualTo(1);
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : runs) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(transitions).containsExactly("opened outage for PT1S: connection refused");
    // Only calls admitted before it opened reached the store: the threshold's, and at most one
    // more in flight on each other thread.
    assertThat(store.calls.get()).isBetween(3, 3 + threads - 1);
    assertThat(rejected.get() + store.calls.get()).isEqualTo(threads * perThread);
    assertThat(policyAnswers).hasSize(threads * perThread);
  }

  @Test
  void theAsynchronousApiPassesTheSameCircuit() throws Exception {
    Tally t = open("outage:blocking", THREE);
    OutageStore store = store(t);
    store.mode = Mode.DOWN;
    AsyncCounters async = t.counters().async();
    for (int i = 0; i < 3; i++) {
      assertThatThrownBy(() -> async.incr("k").toCompletableFuture().join())
          .isInstanceOf(CompletionException.class).hasCauseInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("connection refused");
    }
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThatThrownBy(() -> async.incr("k").toCompletableFuture().join())
        .hasCauseInstanceOf(StoreUnavailableException.class).hasMessageContaining("circuit");
    assertThat(t.counters("v", FailurePolicy.FAIL_OPEN).async().incr("k", 1, 10).toCompletableFuture().join())
        .isEqualTo(11);
    assertThat(t.limiter("l", Limit.tokenBucket(1, Duration.ofHours(1))).withFailurePolicy(FailurePolicy.FAIL_CLOSED)
        .async().tryAcquire(1).toCompletableFuture().join()).isFalse();
    assertThatThrownBy(() -> t.counters().incr("k")).hasMessageContaining("circuit"); // and the sync API
    assertThat(store.calls).hasValue(3);

    advance(OPEN_FOR);
    store.mode = Mode.UP;
    probe(store, () -> async.incr("k").toCompletableFuture().join(), 2);
    assertThat(async.incr("k").toCompletableFuture().join()).isEqualTo(1);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(transitions).containsExactly("opened outage for PT1S: connection refused", "closed outage");
  }

  @Test
  void anInlineStoresAsynchronousCallsPassItToo() throws Exception {
    Tally t = open("outage:", THREE);
    store(t).mode = Mode.DOWN;
    AsyncCounters async = t.counters().async();
    for (int i = 0; i < 3; i++) {
      assertThatThrownBy(() -> async.get("k").toCompletableFuture().join())
          .hasCauseInstanceOf(StoreUnavailableException.class);
    }
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
    advance(OPEN_FOR);
    store(t).mode = Mode.UP;
    probe(store(t), () -> async.incr("k").toCompletableFuture().join(), 2);
    assertThat(async.incr("k").toCompletableFuture().join()).isEqualTo(1);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
  }

  @Test
  void operationIdsAndTransactionsPassItOncePerCall() {
    Tally t = open("outage:", CircuitBreaker.of(2, OPEN_FOR));
    OutageStore store = store(t);
    store.mode = Mode.DOWN;
    assertThatThrownBy(() -> t.counters().withOperationId("op-1").incr("k"))
        .isInstanceOf(StoreUnavailableException.class);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED); // one failure, not two
    assertThatThrownBy(() -> t.counters().transaction(tx -> tx.incr("a").incr("b")))
        .isInstanceOf(StoreUnavailableException.class);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThatThrownBy(() -> t.counters().withOperationId("op-2").incr("k")).hasMessageContaining("circuit");
    assertThat(store.calls).hasValue(2);
  }

  @Test
  void aDisabledBreakerChangesNothing() {
    Tally t = open("outage:", CircuitBreaker.DISABLED);
    OutageStore store = store(t);
    store.mode = Mode.DOWN;
    fail(t.counters(), 20);
    assertThat(store.calls).hasValue(20);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(transitions).isEmpty();
    assertThat(rejected).hasValue(0);
  }

  @Test
  void theLibraryDefaultIsNoBreaker() {
    assertThat(Tally.builder("mem:").circuitBreaker()).isEqualTo(CircuitBreaker.DISABLED);
    try (Tally t = Tally.builder("outage:").build()) {
      store(t).mode = Mode.DOWN;
      fail(t.counters(), 10);
      assertThat(store(t).calls).hasValue(10);
    }
  }

  @Test
  void manyThreadsOnAClosedCircuitKeepCountsExact() throws Exception {
    Tally t = open("mem:", CircuitBreaker.DEFAULT);
    RateLimiter limiter = t.limiter("l", Limit.tokenBucket(5_000, Duration.ofDays(1)));
    int threads = 4;
    int perThread = 20_000;
    AtomicInteger granted = new AtomicInteger();
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> runs = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        runs.add(pool.submit(() -> {
          start.await();
          for (int j = 0; j < perThread; j++) {
            t.counters().incr("hits");
            if (j % 4 == 0) {
              t.counters().async().incr("async-hits").toCompletableFuture().join();
            }
            if (limiter.tryAcquire()) {
              granted.incrementAndGet();
            }
          }
          return null;
        }));
      }
      start.countDown();
      for (Future<?> f : runs) {
        f.get(60, TimeUnit.SECONDS);
      }
    } finally {
      pool.shutdownNow();
    }
    assertThat(t.counters().get("hits")).hasValue((long) threads * perThread);
    assertThat(t.counters().get("async-hits")).hasValue((long) threads * perThread / 4);
    assertThat(granted).hasValue(5_000);
    assertThat(t.circuitState()).isEqualTo(CircuitBreaker.State.CLOSED);
  }

  @Test
  void settingsAreCheckedWithClearMessages() {
    assertThatThrownBy(() -> CircuitBreaker.of(0, OPEN_FOR)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("threshold must be 1 or more, not 0");
    assertThatThrownBy(() -> CircuitBreaker.of(5, Duration.ZERO)).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("open time must be positive");
    assertThatThrownBy(() -> CircuitBreaker.of(5, Duration.ofSeconds(-1)))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> CircuitBreaker.of(5, Duration.ofDays(365L * 300)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("too long");
    assertThatThrownBy(() -> CircuitBreaker.of(5, null)).isInstanceOf(NullPointerException.class);
    assertThatThrownBy(() -> Tally.builder("mem:").circuitBreaker(null)).isInstanceOf(NullPointerException.class);
    assertThat(CircuitBreaker.DEFAULT).isEqualTo(CircuitBreaker.of(5, Duration.ofSeconds(1)));
    assertThat(CircuitBreaker.DEFAULT.enabled()).isTrue();
    assertThat(CircuitBreaker.DISABLED.enabled()).isFalse();
    assertThat(CircuitBreaker.DISABLED).hasToString("CircuitBreaker[disabled]");
  }
}
