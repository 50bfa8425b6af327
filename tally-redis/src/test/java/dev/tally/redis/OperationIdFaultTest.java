package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Counters;
import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.Tally;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Exactly once through outages: 12 threads each increment one counter under a new operation id
 * at a time, and retry every failed call with the same id until it succeeds, while the server
 * is frozen (SIGSTOP, longer than the timeout: calls time out with their outcome unknown) and
 * killed (SIGKILL, with calls in flight) and restarted, six times each. The counter must end
 * at exactly the number of distinct ids.
 *
 * <p>A kill loses what Redis had not yet written to disk, so the server runs with
 * {@code appendonly yes} and {@code appendfsync always}: a write is on disk before it is
 * acknowledged, and the operation and its id's record are one script, so they survive or are
 * lost together. (Without that, a kill can lose acknowledged increments: a durability matter,
 * not an idempotency one.)
 */
class OperationIdFaultTest {
  private static final int THREADS = 12;
  private static final int ROUNDS = 6;

  private RedisServer server;
  private Tally tally;

  @BeforeEach
  void start() {
    server = RedisServer.start("--appendonly", "yes", "--appendfsync", "always");
    tally = Tally.open(server.uri() + "?timeout=300ms");
  }

  @AfterEach
  void stop() {
    tally.close();
    server.kill();
  }

  @Test
  void retriedWithTheirIdsIncrementsCountOnceThroughFreezesAndKills() throws Exception {
    Counters views = tally.counters("fault");
    AtomicBoolean chaosDone = new AtomicBoolean();
    AtomicLong distinctIds = new AtomicLong();
    AtomicInteger failures = new AtomicInteger();
    AtomicInteger unknownOutcomes = new AtomicInteger();
    AtomicInteger progressSinceFault = new AtomicInteger();
    List<Throwable> unexpected = java.util.Collections.synchronizedList(new ArrayList<>());
    CountDownLatch done = new CountDownLatch(THREADS);
    List<Thread> workers = new ArrayList<>();
    for (int t = 0; t < THREADS; t++) {
      boolean async = t % 2 == 1; // half through the asynchronous API
      Thread w = new Thread(() -> {
        try {
          while (!chaosDone.get()) {
            String id = "fault-" + UUID.randomUUID();
            while (true) {
              try {
                if (async) {
                  views.async().withOperationId(id).incr("k").toCompletableFuture().join();
                } else {
                  views.withOperationId(id).incr("k");
                }
                break;
              } catch (StoreException | CompletionException e) {
                Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                if (!(cause instanceof StoreException)) {
                  throw e;
                }
                failures.incrementAndGet();
                if (cause instanceof StoreTimeoutException || String.valueOf(cause.getMessage()).contains("may or may not")) {
                  unknownOutcomes.incrementAndGet();
                }
                pause(5); // a client's back-off before its retry
              }
            }
            distinctIds.incrementAndGet();
            progressSinceFault.incrementAndGet();
          }
        } catch (Throwable e) {
          unexpected.add(e);
        } finally {
          done.countDown();
        }
      }, "fault-worker-" + t);
      workers.add(w);
      w.start();
    }

    for (int round = 0; round < ROUNDS; round++) {
      awaitProgress(progressSinceFault);
      server.pause(); // frozen: calls in flight time out, outcome unknown
      pause(700);
      server.resume();
      awaitProgress(progressSinceFault);
      server.kill(); // calls in flight fail with the connection
      pause(100);
      server.restart(); // reloads the append-only file
    }
    awaitProgress(progressSinceFault);
    chaosDone.set(true);
    done.await();

    assertThat(unexpected).isEmpty();
    assertThat(failures.get()).as("the faults reached the callers").isPositive();
    assertThat(unknownOutcomes.get()).as("some calls failed with their outcome unknown").isPositive();
    assertThat(views.get("k")).as("every distinct id counted exactly once (" + failures + " failed calls retried, "
        + unknownOutcomes + " with unknown outcome)").hasValue(distinctIds.get());
  }

  /** Waits until the workers have completed some more ids since the last fault. */
  private static void awaitProgress(AtomicInteger progress) {
    progress.set(0);
    while (progress.get() < 200) {
      pause(10);
    }
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
