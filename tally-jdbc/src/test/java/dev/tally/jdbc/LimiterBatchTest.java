package dev.tally.jdbc;

import dev.tally.tck.Internals;
import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.WrongKindException;
import dev.tally.tck.ManualTimeSource;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/**
 * Limiter calls decided together ({@code limiterBatch}): exact totals under contention from two
 * stores at once (two pools, as two processes would be), and a batch in which one call fails
 * alone.
 */
class LimiterBatchTest {
  private static final PostgresServer SERVER = PostgresServer.shared();

  private static String unique(String what) {
    return what + "-" + UUID.randomUUID().toString().substring(0, 8) + ":";
  }

  /**
   * 32 threads over two stores on 4 keys, one batch in flight per store, so that batches form,
   * each holding several keys in no particular arrival order, and the two stores' batches
   * contend for the same rows. The clock stands still, so nothing refills: each key grants
   * exactly its capacity. A batch that locked its rows out of key order could deadlock with the
   * other store's; PostgreSQL would then abort one, and its callers would fail.
   */
  @Test
  void manyThreadsOnAFewKeysGrantExactlyTheCapacity() throws Exception {
    String p = unique("batch");
    int keys = 4;
    int capacity = 300;
    int threads = 32;
    int attempts = 100; // 3200 calls, about 800 a key
    ManualTimeSource clock = new ManualTimeSource();
    try (Tally one = Tally.builder(SERVER.uri("pool=4&limiterBatch=1")).timeSource(clock).build();
        Tally two = Tally.builder(SERVER.uri("pool=4&limiterBatch=1")).timeSource(clock).build()) {
      Limit limit = Limit.tokenBucket(capacity, Duration.ofDays(1));
      AtomicLong[] granted = new AtomicLong[keys];
      for (int k = 0; k < keys; k++) {
        granted[k] = new AtomicLong();
      }
      ExecutorService pool = Executors.newFixedThreadPool(threads);
      try {
        List<Future<Long>> done = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
          Tally tally = t % 2 == 0 ? one : two;
          done.add(pool.submit(() -> {
            long denied = 0;
            for (int i = 0; i < attempts; i++) {
              int k = ThreadLocalRandom.current().nextInt(keys);
              if (tally.limiter(p + k, limit).tryAcquire()) {
                granted[k].incrementAndGet();
              } else {
                denied++;
              }
            }
            return denied;
          }));
        }
        long denied = 0;
        for (Future<Long> f : done) {
          denied += f.get();
        }
        for (int k = 0; k < keys; k++) {
          assertThat(granted[k].get()).as("granted on key " + k).isEqualTo(capacity);
        }
        assertThat(denied).isEqualTo((long) threads * attempts - (long) keys * capacity);
      } finally {
        pool.shutdownNow();
      }
      assertThat(batches(one).largest()).as("calls decided together").isGreaterThan(1);
      assertThat(batches(two).largest()).as("calls decided together").isGreaterThan(1);
    }
  }

  /**
   * One batch of four calls, formed while the store's only connection is busy: a counter's name
   * among limiter names, and two calls on one key. The counter's caller gets the same refusal
   * as alone; the others their decisions, the two on one key in the order they came.
   */
  @Test
  void aCountersNameInABatchFailsThatCallerAlone() throws Exception {
    String p = unique("mixed");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(SERVER.jdbcUrl());
    config.setMaximumPoolSize(1);
    config.setPoolName("one-connection");
    String name = "one-" + UUID.randomUUID();
    ExecutorService callers = Executors.newFixedThreadPool(5);
    try (HikariDataSource ds = new HikariDataSource(config)) {
      PostgresDataSources.register(name, ds);
      ManualTimeSource clock = new ManualTimeSource();
      try (Tally tally = Tally.builder("postgresql:?datasource=" + name + "&limiterBatch=1").timeSource(clock).build()) {
        tally.counters().incr(p + "counter", 7);
        Limit one = Limit.tokenBucket(1, Duration.ofDays(1));
        LimiterBatches<?> batches = batches(tally);
        List<Future<Object>> answers = new ArrayList<>();
        Connection held = ds.getConnection();
        try {
          // The first call leads, alone, and waits for the connection; the next four queue behind it.
          answers.add(callers.submit(outcome(() -> tally.limiter(p + "first", one).decide(1))));
          while (batches.running() != 1) {
            Thread.onSpinWait();
          }
          List<Callable<Object>> rest = List.of(
              outcome(() -> tally.limiter(p + "b", one).decide(1)),
              outcome(() -> tally.limiter(p + "counter", one).decide(1)),
              outcome(() -> tally.limiter(p + "a", one).decide(1)),
              outcome(() -> tally.limiter(p + "b", one).decide(1)));
          for (int i = 0; i < rest.size(); i++) {
            answers.add(callers.submit(rest.get(i)));
            while (batches.waiting() != i + 1) {
              Thread.onSpinWait();
            }
          }
        } finally {
          held.close(); // the connection is free: the first call runs, then the four together
        }
        assertThat(answers.get(0).get()).isInstanceOf(Decision.class);
        Object firstB = answers.get(1).get();
        Object counter = answers.get(2).get();
        Object a = answers.get(3).get();
        Object secondB = answers.get(4).get();
        assertThat(counter).isInstanceOf(WrongKindException.class);
        assertThat(((Exception) counter).getMessage()).contains(p + "counter");
        assertThat(((Decision) a).allowed()).isTrue();
        assertThat(((Decision) firstB).allowed()).as("the first call on b came first").isTrue();
        assertThat(((Decision) secondB).allowed()).as("b's one unit went to the first call").isFalse();
        assertThat(batches.largest()).as("the four calls went in one batch").isEqualTo(4);
        // the refusal rolled nothing back: the other calls' decisions were written
        assertThat(tally.counters().get(p + "counter")).hasValue(7);
        assertThat(tally.limiter(p + "a", one).available()).isZero();
        assertThat(tally.limiter(p + "b", one).available()).isZero();
        assertThat(tally.limiter(p + "first", one).available()).isZero();
      } finally {
        PostgresDataSources.unregister(name);
      }
    } finally {
      callers.shutdownNow();
    }
  }

  private static LimiterBatches<?> batches(Tally tally) {
    return ((PostgresStore) Internals.storeOf(tally)).limiterBatches();
  }

  private static Callable<Object> outcome(Callable<Object> call) {
    return () -> {
      try {
        return call.call();
      } catch (RuntimeException e) {
        return e;
      }
    };
  }
}
