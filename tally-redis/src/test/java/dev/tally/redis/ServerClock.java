package dev.tally.redis;

import dev.tally.tck.ManualTimeSource;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A redis-server whose wall clock is a test's: {@code server_clock.c} (a test resource),
 * compiled here with {@code cc} and loaded with {@code LD_PRELOAD}, answers the server's
 * {@code clock_gettime(CLOCK_REALTIME)}, {@code gettimeofday} and {@code time} from a file that
 * this class rewrites whenever the followed {@link ManualTimeSource} moves. Redis' {@code TIME}
 * (which the limiter script reads) and its key expiry then both run on the kit's clock, so the
 * store can run on the server's clock, as in production, and still be scripted to the
 * microsecond (Redis' {@code TIME} has no finer grain).
 */
final class ServerClock {
  private static ServerClock shared;

  private final Path file;
  private final RedisServer server;

  private ServerClock(Path dir) {
    this.file = dir.resolve("clock");
    set(System.currentTimeMillis() * 1_000_000L);
    Path library = compile(dir);
    this.server = RedisServer.startWith(Map.of("LD_PRELOAD", library.toString(),
        "TALLY_SERVER_CLOCK", file.toString()));
  }

  /** The shared server on a test clock, started on first use. */
  static synchronized ServerClock shared() {
    if (shared == null) {
      try {
        shared = new ServerClock(Files.createTempDirectory("tally-server-clock"));
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
    return shared;
  }

  RedisServer server() {
    return server;
  }

  /** From now on the server's wall clock is {@code clock}'s. */
  void follow(ManualTimeSource clock) {
    clock.follow(this::set);
  }

  /** Sets the server's wall clock, atomically: written beside the file, then renamed over it. */
  private synchronized void set(long epochNanos) {
    Path next = file.resolveSibling("clock.next");
    try {
      Files.writeString(next, Long.toString(epochNanos));
      Files.move(next, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot set the server's clock in " + file, e);
    }
  }

  private static Path compile(Path dir) {
    Path source = dir.resolve("server_clock.c");
    Path library = dir.resolve("libtallyclock.so");
    try (InputStream in = ServerClock.class.getResourceAsStream("server_clock.c")) {
      if (in == null) {
        throw new IllegalStateException("test resource server_clock.c is missing");
      }
      Files.copy(in, source);
      Process cc = new ProcessBuilder(List.of("cc", "-shared", "-fPIC", "-O2", "-o", library.toString(),
          source.toString())).redirectErrorStream(true).start();
      String output = new String(cc.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      if (!cc.waitFor(60, TimeUnit.SECONDS) || cc.exitValue() != 0) {
        throw new IllegalStateException("cc could not build the server clock (install gcc):\n" + output);
      }
      return library;
    } catch (IOException e) {
      throw new UncheckedIOException("cannot build the server clock with cc (install gcc)", e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
