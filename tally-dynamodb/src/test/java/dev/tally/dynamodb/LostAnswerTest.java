package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Counters;
import dev.tally.StoreException;
import dev.tally.StoreUnavailableException;
import dev.tally.Tally;
import dev.tally.tck.Concurrently;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * Writes that DynamoDB applied but whose answer was lost ({@link DroppingProxy} in front of
 * dynalite closes the connection instead of answering), the case in which a retry can count an
 * increment twice.
 *
 * <ul>
 *   <li>With operation ids, callers that retry every failed call with the same id until it
 *       succeeds end at exactly one count per distinct id, from several threads, two stores and
 *       the async API, while the store re-sends lost answers itself too.
 *   <li>Without ids, by default, a lost answer is never re-sent: the caller hears "may or may not
 *       have been applied", and every increment sent was counted once.
 *   <li>With {@code retryLost=true} (the AWS SDK's own behaviour), the re-sent increments count
 *       twice: why it is not the default.
 * </ul>
 */
class LostAnswerTest {
  private static final String TABLE = "tally-test-lost-answers";

  private static String uri(DroppingProxy proxy, String... options) {
    Dynalite.tableUri(TABLE, "key"); // created on the real server
    StringBuilder uri = new StringBuilder("dynamodb://" + TABLE + "?endpoint=" + proxy.endpoint()
        + "&key=key&accessKey=test&secretKey=test&region=us-east-1&timeout=10000");
    for (String o : options) {
      uri.append('&').append(o);
    }
    return uri.toString();
  }

  private static boolean write(String operation) {
    return operation.equals("UpdateItem") || operation.equals("PutItem") || operation.equals("DeleteItem");
  }

  @Test
  void retriesWithTheSameIdCountEachIdExactlyOnce() throws Exception {
    Random random = new Random(14);
    int threads = 4;
    int idsPerThread = 30;
    String[][] ids = new String[threads + 1][idsPerThread];
    for (String[] row : ids) {
      for (int i = 0; i < row.length; i++) {
        row[i] = "fault-" + UUID.randomUUID();
      }
    }
    AtomicInteger callerRetries = new AtomicInteger();
    String group = "lost-" + UUID.randomUUID();
    // Half of all writes are applied and then lose their answer; retries=1: the store re-sends
    // once, so a quarter of the calls reach their caller as failures, who retries with the id.
    try (DroppingProxy proxy = new DroppingProxy(Dynalite.endpoint(), op -> {
          synchronized (random) {
            return write(op) && random.nextBoolean();
          }
        });
        Tally a = Tally.open(uri(proxy, "retries=1"));
        Tally b = Tally.open(uri(proxy, "retries=1", "async=off"))) {
      Counters[] stores = {a.counters(group), b.counters(group)};
      Concurrently.run(threads, idsPerThread, (t, i) -> {
        for (;;) {
          try {
            stores[t % 2].withOperationId(ids[t][i]).incr("views");
            return;
          } catch (StoreException lost) {
            callerRetries.incrementAndGet(); // "may or may not have been applied": retry it
          }
        }
      });
      for (String id : ids[threads]) { // the async API, one call at a time
        for (;;) {
          try {
            a.counters(group).async().withOperationId(id).incr("views").toCompletableFuture().join();
            break;
          } catch (CompletionException lost) {
            assertThat(lost.getCause()).isInstanceOf(StoreException.class);
            callerRetries.incrementAndGet();
          }
        }
      }
      int distinct = (threads + 1) * idsPerThread;
      assertThat(a.counters(group).get("views")).as("one count per distinct id").hasValue(distinct);
      assertThat(proxy.dropped("UpdateItem")).as("increments applied whose answer was lost").isGreaterThan(10);
      assertThat(callerRetries.get()).as("calls that failed and were retried by their caller").isGreaterThan(0);
      System.out.println("[lost answers] " + distinct + " ids, " + proxy.forwarded("UpdateItem")
          + " UpdateItems sent (repeats included), " + proxy.dropped("UpdateItem") + " applied and unanswered, "
          + proxy.dropped("PutItem") + " id claims unanswered, " + callerRetries + " caller retries");
    }
  }

  @Test
  void byDefaultALostAnswerIsReportedAndNeverResent() throws Exception {
    AtomicInteger n = new AtomicInteger();
    String group = "lost-" + UUID.randomUUID();
    try (DroppingProxy proxy = new DroppingProxy(Dynalite.endpoint(),
            op -> op.equals("UpdateItem") && n.incrementAndGet() % 3 == 0);
        Tally tally = Tally.open(uri(proxy))) {
      int calls = 60;
      int failed = 0;
      for (int i = 0; i < calls; i++) {
        try {
          tally.counters(group).incr("k");
        } catch (StoreUnavailableException e) {
          assertThat(e).hasMessageContaining("may or may not have been applied");
          failed++;
        }
      }
      assertThat(proxy.forwarded("UpdateItem")).as("each increment sent once").isEqualTo(calls);
      assertThat(failed).isEqualTo(proxy.dropped("UpdateItem")).isEqualTo(calls / 3);
      assertThat(tally.counters(group).get("k")).as("each counted once, answered or not").hasValue(calls);
    }
  }

  @Test
  void withRetryLostAResentIncrementCountsTwice() throws Exception {
    AtomicInteger n = new AtomicInteger();
    String group = "lost-" + UUID.randomUUID();
    try (DroppingProxy proxy = new DroppingProxy(Dynalite.endpoint(),
            op -> op.equals("UpdateItem") && n.incrementAndGet() % 3 == 0);
        Tally tally = Tally.open(uri(proxy, "retryLost=true"))) {
      int calls = 30;
      for (int i = 0; i < calls; i++) {
        tally.counters(group).incr("k"); // each answer lost is re-sent by the SDK, and succeeds
      }
      assertThat(proxy.dropped("UpdateItem")).isGreaterThan(0);
      assertThat(tally.counters(group).get("k")).as("counted twice: once per send")
          .hasValue((long) calls + proxy.dropped("UpdateItem"));
    }
  }
}
