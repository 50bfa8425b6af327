package dev.tally.tck;

import dev.tally.ConcurrencyLimit;
import dev.tally.Lease;
import dev.tally.StoreException;
import dev.tally.Tally;
import dev.tally.TimeSource;
import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyResult;
import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A child process of {@link ConcurrencyProcessesContract}: opens the store at URI, prints READY,
 * waits for the GO file, then on THREADS threads, until the STOP file exists, acquires a lease of
 * NAME (MAX permits, weight 1 or 2, TTL ms, waiting up to 2 s), holds it HOLD/2 to HOLD ms, writes
 * to the {@link FencedFile} FENCE with its token, releases it and works up to HOLD ms (at least
 * 20 ms) before the next. Every step is appended to LOG at
 * once, one unbuffered write a line (so a line is in the page cache even if the process is killed
 * next), with the store's instants:
 *
 * <pre>
 * G token weight grantedAt expiresAt   granted (grantedAt = expiresAt - ttl: the instant the store decided)
 * W token accepted                     the fenced write: 1 accepted, 0 refused (a newer holder wrote)
 * R token releasedAt                   released, at the instant the store decided it
 * U error                              an acquire failed (StoreException): its outcome is unknown
 * </pre>
 *
 * A holder of 100 ms or more also prints {@code HELD token wallClockNanos} on stdout at each grant,
 * so that its parent can kill or pause it while it holds one.
 *
 * <p>Usage: {@code ConcurrencyWorker URI NAME GO STOP LOG FENCE MAX TTL_MS THREADS HOLD_MS}.
 */
public final class ConcurrencyWorker {
  /** The most a short holder works between two leases. */
  private static final long THINK_NANOS = TimeUnit.MILLISECONDS.toNanos(20);

  private ConcurrencyWorker() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 10) {
      throw new IllegalArgumentException(
          "usage: ConcurrencyWorker URI NAME GO STOP LOG FENCE MAX TTL_MS THREADS HOLD_MS");
    }
    String uri = args[0];
    String name = args[1];
    Path go = Path.of(args[2]);
    Path stop = Path.of(args[3]);
    FencedFile fence = new FencedFile(Path.of(args[5]));
    long max = Long.parseLong(args[6]);
    Duration ttl = Duration.ofMillis(Long.parseLong(args[7]));
    int threads = Integer.parseInt(args[8]);
    long holdNanos = TimeUnit.MILLISECONDS.toNanos(Long.parseLong(args[9]));
    try (Tally tally = Tally.open(uri);
        Store store = openStore(uri);
        FileOutputStream out = new FileOutputStream(args[4], true)) {
      ConcurrencyLimit limit = tally.concurrency(name, max);
      System.out.println("READY");
      System.out.flush();
      while (!Files.exists(go)) {
        Thread.sleep(1);
      }
      // A worker that throws fails this process (exit 1), so the parent hears of it.
      Concurrently.run(threads, 1, (t, i) -> {
        while (!Files.exists(stop)) {
          hold(limit, store, fence, ttl, holdNanos, out);
        }
      });
    }
    System.out.println("DONE");
    System.out.flush();
  }

  /** One lease: acquired, held, a fenced write, released. */
  private static void hold(ConcurrencyLimit limit, Store store, FencedFile fence, Duration ttl, long holdNanos,
      FileOutputStream out) {
    long weight = ThreadLocalRandom.current().nextInt(4) == 0 ? 2 : 1;
    Optional<Lease> got;
    try {
      got = limit.acquire(weight, ttl, Duration.ofSeconds(2));
    } catch (StoreException e) {
      write(out, "U " + e.toString().replace('\n', ' '));
      return;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    if (got.isEmpty()) {
      return;
    }
    Lease l = got.get();
    long expires = ChronoUnit.NANOS.between(Instant.EPOCH, l.expiresAt());
    write(out, "G " + l.fencingToken() + " " + weight + " " + (expires - ttl.toNanos()) + " " + expires);
    if (holdNanos >= TimeUnit.MILLISECONDS.toNanos(100)) {
      System.out.println("HELD " + l.fencingToken() + " " + wallNanos());
      System.out.flush();
    }
    LockSupport.parkNanos(holdNanos / 2 + ThreadLocalRandom.current().nextLong(holdNanos / 2 + 1));
    write(out, "W " + l.fencingToken() + " " + (fence.write(l.fencingToken()) ? 1 : 0));
    // Released through the store to learn the instant it decided at; the API's release is the
    // same call.
    String id = l.id();
    long nonce = Long.parseUnsignedLong(id.substring(id.indexOf('.') + 1), 16);
    ConcurrencyResult r;
    try {
      r = store.concurrency(ConcurrencyCall.release(limit.name(), limit.maxPermits(), l.fencingToken(), nonce));
    } catch (StoreException e) {
      write(out, "U release " + e.toString().replace('\n', ' '));
      return;
    }
    if (r.ok()) {
      write(out, "R " + l.fencingToken() + " " + r.now());
    }
    // Other work before the next job, as real holders do; the waiters' queue in the store keeps a
    // process that re-acquires at once from taking the permits others wait for
    // (docs/limiters.md#waiting-the-order-guaranteed).
    LockSupport.parkNanos(ThreadLocalRandom.current().nextLong(Math.max(holdNanos, THINK_NANOS) + 1));
  }

  /** The wall clock in epoch nanoseconds, as the parent reads it. */
  static long wallNanos() {
    return TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis());
  }

  /** The store behind the URI, through its provider, to call its concurrency steps directly. */
  private static Store openStore(String uri) {
    String scheme = Tally.scheme(uri);
    for (StoreProvider p : ServiceLoader.load(StoreProvider.class, Tally.class.getClassLoader())) {
      if (p.schemes().contains(scheme)) {
        return p.open(uri, new StoreContext(TimeSource.system(), false, Executors.newCachedThreadPool(r -> {
          Thread t = new Thread(r, "concurrency-worker-store");
          t.setDaemon(true);
          return t;
        })));
      }
    }
    throw new IllegalArgumentException("no store provider for " + uri);
  }

  private static void write(FileOutputStream out, String line) {
    byte[] b = (line + "\n").getBytes(StandardCharsets.UTF_8);
    synchronized (out) {
      try {
        out.write(b);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}
