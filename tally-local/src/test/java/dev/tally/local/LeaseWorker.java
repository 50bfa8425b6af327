package dev.tally.local;

import dev.tally.ConcurrencyLimit;
import dev.tally.Lease;
import dev.tally.Tally;
import dev.tally.TimeSource;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.Store;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.locks.LockSupport;

/**
 * A child process of {@link ConcurrencyMultiProcessTest}: opens {@code file:DIR}, waits for the GO
 * file, then on THREADS threads acquires leases of {@code NAME} (MAX permits, TTL ms), holds each
 * HOLD_MS/2 to HOLD_MS ms and releases it (a holder of 100 ms or more prints HELD token grantedAt on
 * stdout at each grant), until the STOP file exists. Every grant and release is appended to LOG at
 * once, one unbuffered write a line, with the store's instants (each lease is held up to HOLD_MS):
 *
 * <pre>
 * G token weight grantedAt expiresAt     (grantedAt = expiresAt - ttl: the instant the store decided)
 * R token releasedAt                     (the instant the store decided the release at)
 * </pre>
 *
 * Usage: {@code LeaseWorker DIR GO STOP LOG NAME MAX TTL_MS THREADS HOLD_MS}.
 */
public final class LeaseWorker {
  private LeaseWorker() {}

  public static void main(String[] args) throws Exception {
    Path dir = Path.of(args[0]);
    Path go = Path.of(args[1]);
    Path stop = Path.of(args[2]);
    Path log = Path.of(args[3]);
    String name = args[4];
    long max = Long.parseLong(args[5]);
    Duration ttl = Duration.ofMillis(Long.parseLong(args[6]));
    int threads = Integer.parseInt(args[7]);
    long holdNanos = Duration.ofMillis(Long.parseLong(args[8])).toNanos();
    try (Tally tally = Tally.open("file:" + dir);
        Store store = new LocalStore(LocalOptions.parse("file:" + dir), TimeSource.system());
        FileOutputStream out = new FileOutputStream(log.toFile(), true)) {
      ConcurrencyLimit limit = tally.concurrency(name, max);
      System.out.println("READY");
      System.out.flush();
      while (!Files.exists(go)) {
        Thread.sleep(1);
      }
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        Thread w = new Thread(() -> {
          try {
            while (!Files.exists(stop)) {
              long weight = ThreadLocalRandom.current().nextInt(4) == 0 ? 2 : 1;
              Optional<Lease> got = limit.acquire(weight, ttl, Duration.ofSeconds(2));
              if (got.isEmpty()) {
                continue;
              }
              Lease l = got.get();
              long expires = l.expiresAt().getEpochSecond() * 1_000_000_000L + l.expiresAt().getNano();
              write(out, "G " + l.fencingToken() + " " + weight + " " + (expires - ttl.toNanos()) + " " + expires);
              if (holdNanos >= 100_000_000L) { // a long holder tells its parent when it holds one, to be killed then
                System.out.println("HELD " + l.fencingToken() + " " + (expires - ttl.toNanos()));
                System.out.flush();
              }
              LockSupport.parkNanos(holdNanos / 2 + ThreadLocalRandom.current().nextLong(holdNanos / 2 + 1));
              // Released through the store to learn the instant it decided at; the API's
              // release is the same call.
              String id = l.id();
              long nonce = Long.parseUnsignedLong(id.substring(id.indexOf('.') + 1), 16);
              ConcurrencyResult r = store.concurrency(ConcurrencyCall.release(name, max, l.fencingToken(), nonce));
              if (r.ok()) {
                write(out, "R " + l.fencingToken() + " " + r.now());
              }
            }
          } catch (InterruptedException | IOException e) {
            throw new IllegalStateException(e);
          }
        }, "lease-worker-" + t);
        w.start();
        workers.add(w);
      }
      for (Thread w : workers) {
        w.join();
      }
    }
    System.out.println("DONE");
    System.out.flush();
  }

  private static void write(FileOutputStream out, String line) throws IOException {
    byte[] b = (line + "\n").getBytes(StandardCharsets.UTF_8);
    synchronized (out) {
      out.write(b); // one write(2): in the page cache even if the process is killed next
    }
  }
}
