package dev.tally.internal;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.CircuitBreaker;
import dev.tally.StoreUnavailableException;
import dev.tally.TallyListener;
import dev.tally.internal.OutageStoreProvider.Mode;
import dev.tally.internal.OutageStoreProvider.OutageStore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * The circuit's probe, with the executor in the test's hands: a probe runs when the test runs the
 * queue (or at once, or on a thread held by the store), and time is a manual clock. The probe is
 * a background read of one key; no caller ever waits for it.
 */
class CircuitProbeTest {
  private static final Duration OPEN_FOR = Duration.ofSeconds(1);

  private final AtomicLong now = new AtomicLong(1_700_000_000_000_000_000L);
  private final List<String> transitions = Collections.synchronizedList(new ArrayList<>());
  private final AtomicInteger rejected = new AtomicInteger();
  private final CountDownLatch closed = new CountDownLatch(1);
  /** The probes submitted and not run yet. */
  private final Queue<Runnable> probes = new ConcurrentLinkedQueue<>();
  private final AtomicInteger submitted = new AtomicInteger();
  private final Executor queue = task -> {
    submitted.incrementAndGet();
    probes.add(task);
  };

  private final TallyListener listener = new TallyListener() {
    @Override
    public void onCircuitOpened(String store, Throwable cause, Duration openFor) {
      transitions.add("opened: " + cause.getMessage());
    }

    @Override
    public void onCircuitClosed(String store) {
      transitions.add("closed");
      closed.countDown();
    }

    @Override
    public void onCircuitRejected(String store) {
      rejected.incrementAndGet();
    }
  };

  private final OutageStore outage = new OutageStore(new MemoryStore(now::get, Duration.ofHours(1).toNanos()), false);

  private Circuit circuit(Executor executor) {
    return new Circuit("outage", CircuitBreaker.of(3, OPEN_FOR), now::get, listener, outage, executor);
  }

  /** Three failed calls: the circuit is open. */
  private CircuitBreakerStore opened(Circuit circuit) {
    CircuitBreakerStore store = new CircuitBreakerStore(outage, circuit);
    outage.mode = Mode.DOWN;
    for (int i = 0; i < 3; i++) {
      assertThatThrownBy(() -> store.incr("k", 1, 0, true)).hasMessage("connection refused");
    }
    assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThat(outage.calls).hasValue(3);
    return store;
  }

  private void runProbes() {
    for (Runnable r; (r = probes.poll()) != null; ) {
      r.run();
    }
  }

  private static void refusedInFlight(CircuitBreakerStore store) {
    assertThatThrownBy(() -> store.incr("k", 1, 0, true)).isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("circuit of the outage store is open")
        .hasMessageContaining("a probe of the store is in flight");
  }

  @Test
  void theFirstCallAfterOpenForIsRefusedAtOnceAndStartsExactlyOneProbe() {
    Circuit circuit = circuit(queue);
    CircuitBreakerStore store = opened(circuit);
    outage.mode = Mode.UP;
    now.addAndGet(OPEN_FOR.toNanos());
    assertThatThrownBy(() -> store.incr("k", 1, 0, true)).isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("a probe of the store is in flight").hasMessageContaining("connection refused");
    assertThat(submitted).hasValue(1);
    assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.HALF_OPEN);
    for (int i = 0; i < 10; i++) {
      refusedInFlight(store);
    }
    now.addAndGet(OPEN_FOR.toNanos() * 5); // a probe in flight is never doubled, however long it takes
    refusedInFlight(store);
    assertThat(submitted).hasValue(1);
    assertThat(outage.calls).as("no caller reached the store").hasValue(3);
    assertThat(rejected).hasValue(12);
  }

  @Test
  void concurrentCallersStartOneProbeOnly() throws Exception {
    Circuit circuit = circuit(queue);
    CircuitBreakerStore store = opened(circuit);
    now.addAndGet(OPEN_FOR.toNanos());
    int threads = 8;
    int perThread = 500;
    ExecutorService pool = Executors.newFixedThreadPool(threads);
    AtomicInteger refused = new AtomicInteger();
    try {
      CountDownLatch start = new CountDownLatch(1);
      List<Future<?>> runs = new ArrayList<>();
      for (int i = 0; i < threads; i++) {
        runs.add(pool.submit(() -> {
          start.await();
          for (int j = 0; j < perThread; j++) {
            try {
              store.get("k");
            } catch (StoreUnavailableException e) {
              refused.incrementAndGet();
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
    assertThat(submitted).hasValue(1);
    assertThat(refused).hasValue(threads * perThread);
    assertThat(outage.calls).hasValue(3);
  }

  @Test
  void anAnsweredProbeReadsOneKeyAndClosesItAndTheNextCallReachesTheStore() {
    Circuit circuit = circuit(queue);
    CircuitBreakerStore store = opened(circuit);
    now.addAndGet(OPEN_FOR.toNanos());
    outage.mode = Mode.UP;
    refusedInFlight(store);
    runProbes();
    assertThat(outage.read).containsExactly(Circuit.PROBE_KEY);
    assertThat(outage.calls).hasValue(4);
    assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(transitions).containsExactly("opened: connection refused", "closed");
    assertThat(store.incr("k", 1, 0, true)).isEqualTo(1);
    assertThat(outage.calls).hasValue(5);
    assertThat(outage.get(Circuit.PROBE_KEY)).as("the probe wrote nothing").isNull();
  }

  @Test
  void aFailedProbeReopensItForAnotherOpenFor() {
    Circuit circuit = circuit(queue);
    CircuitBreakerStore store = opened(circuit);
    now.addAndGet(OPEN_FOR.toNanos());
    outage.mode = Mode.TIMEOUT;
    refusedInFlight(store);
    runProbes();
    assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThatThrownBy(() -> store.incr("k", 1, 0, true)).hasMessageContaining("a probe failed")
        .hasMessageContaining("the next probe is in 1000 ms").hasMessageContaining("no answer within 2 s");
    now.addAndGet(OPEN_FOR.toNanos() - 1);
    assertThatThrownBy(() -> store.incr("k", 1, 0, true)).hasMessageContaining("the next probe is in 1 ms");
    assertThat(submitted).hasValue(1);
    now.addAndGet(1);
    outage.mode = Mode.UP;
    refusedInFlight(store);
    assertThat(submitted).hasValue(2);
    runProbes();
    assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(outage.calls).as("three failures and two probes").hasValue(5);
    assertThat(transitions).containsExactly("opened: connection refused", "opened: no answer within 2 s",
        "closed");
  }

  @Test
  void aProbeThatEndsInSomethingElseClosesIt() {
    Circuit circuit = circuit(queue);
    CircuitBreakerStore store = opened(circuit);
    now.addAndGet(OPEN_FOR.toNanos());
    outage.mode = Mode.BUG;
    refusedInFlight(store);
    runProbes();
    assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.CLOSED);
    assertThat(transitions).containsExactly("opened: connection refused", "closed");
  }

  @Test
  void aProbeRunOnTheCallersThreadAdmitsThatCallerWhenItIsAnswered() {
    Circuit circuit = circuit(Runnable::run);
    CircuitBreakerStore store = opened(circuit);
    now.addAndGet(OPEN_FOR.toNanos());
    outage.mode = Mode.UP;
    assertThat(store.incr("k", 1, 0, true)).isEqualTo(1);
    assertThat(outage.read).containsExactly(Circuit.PROBE_KEY);
    assertThat(outage.calls).as("the probe, then the call").hasValue(5);
    assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.CLOSED);
  }

  @Test
  void aProbeRunOnTheCallersThreadThatFailsRefusesThatCallerOnce() {
    Circuit circuit = circuit(Runnable::run);
    CircuitBreakerStore store = opened(circuit);
    now.addAndGet(OPEN_FOR.toNanos());
    assertThatThrownBy(() -> store.incr("k", 1, 0, true)).isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("a probe failed").hasMessageContaining("the next probe is in 1000 ms");
    assertThat(outage.calls).as("one probe, no call").hasValue(4);
    assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.OPEN);
  }

  @Test
  void aProbeTheExecutorRefusesCountsAsAFailedProbe() {
    Circuit circuit = circuit(task -> {
      throw new RejectedExecutionException("shut down");
    });
    CircuitBreakerStore store = opened(circuit);
    now.addAndGet(OPEN_FOR.toNanos());
    assertThatThrownBy(() -> store.incr("k", 1, 0, true)).hasMessageContaining("a probe failed")
        .hasMessageContaining("shut down");
    assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.OPEN);
    assertThat(outage.calls).hasValue(3);
  }

  @Test
  void whileAProbeHangsInTheStoreCallersAreRefusedAtOnce() throws Exception {
    ExecutorService probeThreads = Executors.newCachedThreadPool();
    try {
      Circuit circuit = circuit(probeThreads);
      CircuitBreakerStore store = opened(circuit);
      outage.mode = Mode.UP;
      CountDownLatch release = new CountDownLatch(1);
      outage.gate = release; // every store call blocks until released: a frozen store
      now.addAndGet(OPEN_FOR.toNanos());
      refusedInFlight(store);
      assertThat(outage.entered.await(10, TimeUnit.SECONDS)).as("the probe reached the store").isTrue();
      long slowest = 0;
      for (int i = 0; i < 1_000; i++) {
        long t0 = System.nanoTime();
        refusedInFlight(store);
        slowest = Math.max(slowest, System.nanoTime() - t0);
        if (i % 100 == 0) {
          now.addAndGet(OPEN_FOR.toNanos()); // however long it hangs
        }
      }
      // Generous for a loaded machine; a caller that waited for the store would wait 10 s.
      assertThat(Duration.ofNanos(slowest)).isLessThan(Duration.ofSeconds(1));
      assertThat(outage.calls).as("three failures and the one probe").hasValue(4);
      assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.HALF_OPEN);

      outage.gate = null;
      release.countDown();
      assertThat(closed.await(10, TimeUnit.SECONDS)).as("the probe answered").isTrue();
      assertThat(circuit.state()).isEqualTo(CircuitBreaker.State.CLOSED);
      assertThat(store.incr("k", 1, 0, true)).isEqualTo(1);
    } finally {
      probeThreads.shutdownNow();
    }
  }
}
