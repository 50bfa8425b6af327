package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.tck.ChildJvm;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Clients that share nothing but the table: four stores in this JVM and two child JVMs drive
 * one leaky bucket of capacity 100 and one counter. Exactly 100 adds are granted and the
 * counter is exact, which only holds if every grant was computed from the state it replaced.
 */
class CrossClientTest {
  private static final int STORES = 4;
  private static final int CHILDREN = 2;
  private static final int THREADS = 2;
  private static final int ATTEMPTS = 25;

  @Test
  void aStaleViewNeverWritesOverStateRecreatedSinceItWasRead() {
    String name = "recreated-" + UUID.randomUUID();
    Limit limit = Limit.tokenBucket(5, Duration.ofHours(1));
    try (Tally a = Tally.open(Dynalite.uri()); Tally b = Tally.open(Dynalite.uri())) {
      assertThat(a.limiter(name, limit).tryAcquire()).isTrue();
      assertThat(a.limiter(name, limit).tryAcquire()).isTrue(); // a's view: 3 left, 2 writes
      b.limiter(name, limit).reset(); // the item is deleted...
      assertThat(b.limiter(name, limit).tryAcquire(1)).isTrue(); // ...and rewritten twice
      assertThat(b.limiter(name, limit).tryAcquire(4)).isTrue(); // empty now
      assertThat(a.limiter(name, limit).tryAcquire(3)).as("a's stale view must not win").isFalse();
      assertThat(a.limiter(name, limit).available()).isZero();
    }
  }

  @Test
  @Timeout(value = 3, unit = TimeUnit.MINUTES)
  void storesAndProcessesNeverGrantMoreThanTheCapacity() throws Exception {
    String uri = Dynalite.uri();
    String bucket = "cross-bucket-" + UUID.randomUUID();
    String counter = "cross-counter-" + UUID.randomUUID();

    List<ChildJvm> children = new ArrayList<>();
    for (int c = 0; c < CHILDREN; c++) {
      children.add(ChildJvm.start(ClientWorkload.class, uri, bucket, counter, Integer.toString(THREADS),
          Integer.toString(ATTEMPTS)));
    }
    List<Tally> stores = new ArrayList<>();
    try {
      for (int s = 0; s < STORES; s++) {
        stores.add(Tally.open(uri));
      }
      for (ChildJvm c : children) {
        c.await("READY", 60_000);
      }
      for (ChildJvm c : children) {
        OutputStream in = c.process().getOutputStream();
        in.write("go\n".getBytes(StandardCharsets.UTF_8));
        in.flush();
      }
      List<ClientWorkload> local = new ArrayList<>();
      List<Thread> runners = new ArrayList<>();
      for (Tally t : stores) {
        ClientWorkload w = new ClientWorkload();
        local.add(w);
        Thread r = new Thread(() -> {
          try {
            w.run(t, bucket, counter, THREADS, ATTEMPTS);
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        });
        r.start();
        runners.add(r);
      }
      for (Thread r : runners) {
        r.join();
      }
      long granted = 0;
      long incremented = 0;
      long gaveUp = 0;
      for (ClientWorkload w : local) {
        granted += w.granted.get();
        incremented += w.incremented.get();
        gaveUp += w.gaveUp.get();
      }
      for (ChildJvm c : children) {
        String line = c.await("RESULT ", 60_000);
        assertThat(c.process().waitFor(60, TimeUnit.SECONDS)).isTrue();
        String[] parts = line.split(" ");
        granted += Long.parseLong(parts[1]);
        incremented += Long.parseLong(parts[2]);
        gaveUp += Long.parseLong(parts[3]);
      }
      long attempts = (long) (STORES + CHILDREN) * THREADS * ATTEMPTS;
      System.out.printf("[cross-client] %d attempts: %d granted, %d gave up under contention%n",
          attempts, granted, gaveUp);
      assertThat(granted).isEqualTo(ClientWorkload.CAPACITY);
      assertThat(incremented).isEqualTo(attempts);
      assertThat(stores.get(0).counters().get(counter)).hasValue(attempts);
      assertThat(stores.get(1).leakyBucket(bucket, 100, Duration.ofDays(1)).state().remaining()).isZero();
    } finally {
      stores.forEach(Tally::close);
      children.forEach(ChildJvm::close);
    }
  }
}
