package dev.tally.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.jdbc.Flush;
import dev.tally.jdbc.FlushResult;
import dev.tally.jdbc.PostgresDataSources;
import dev.tally.jdbc.PostgresSchema;
import io.github.bucket4j.Bucket;
import io.github.bucket4j.BucketConfiguration;
import io.github.bucket4j.distributed.proxy.ProxyManager;
import io.github.bucket4j.postgresql.Bucket4jPostgreSQL;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.UserPrincipal;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import java.util.concurrent.atomic.AtomicReference;

/**
 * Tally's PostgreSQL store against its peers on one PostgreSQL server, in one run, every client
 * on a HikariCP pool of the same size:
 *
 * <ul>
 *   <li><b>limiter</b>: token-bucket decisions by Tally (the schema's limiter function; calls
 *       that wait at the same time decided together, one statement per batch, as by default;
 *       by default committed without waiting for the WAL flush, and with
 *       {@code limiterCommit=server} as the server's {@code synchronous_commit} says) against Bucket4j 8.14's PostgreSQL backend (select-for-update:
 *       a transaction of SELECT ... FOR UPDATE, UPDATE, COMMIT per decision);
 *   <li><b>incr</b>: Tally's {@code incr} against a plain
 *       {@code UPDATE counters SET v = v + 1 WHERE k = ? RETURNING v} from the same pool;
 *   <li><b>flush</b>: counts moved per second by {@link Flush} for 10,000 keys, from {@code mem:}
 *       and from the PostgreSQL store itself.
 * </ul>
 *
 * <pre>
 * mvn -B -q package -pl tally-bench -am -DskipTests
 * java -cp tally-bench/target/benchmarks.jar dev.tally.bench.PostgresComparison [--seconds 5]
 *     [--threads 1,8,32] [--keys 1000] [--pool 16] [--flush-keys 10000] [--synchronous-commit on|off]
 *     [--uri postgresql://...]
 * </pre>
 *
 * Without {@code --uri} it runs {@code initdb} and {@code pg_ctl} itself (as the {@code postgres}
 * user when run as root) on a free loopback port, with the server's defaults except
 * {@code max_connections} and {@code synchronous_commit} (default {@code on}: every commit waits
 * for its WAL flush, so a single client measures the disk; {@code off} measures the statements),
 * and stops it at the end.
 */
public final class PostgresComparison {
  private PostgresComparison() {}

  private interface Op {
    void run(int thread, long key) throws Exception;
  }

  private record Row(String part, String name, int threads, long ops, double seconds, double p50us, double p99us) {
    double rate() {
      return ops / seconds;
    }
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> o = new LinkedHashMap<>();
    for (int i = 0; i + 1 < args.length; i += 2) {
      o.put(args[i].replaceFirst("^--", ""), args[i + 1]);
    }
    double seconds = Double.parseDouble(o.getOrDefault("seconds", "5"));
    int[] threads = Arrays.stream(o.getOrDefault("threads", "1,8,32").split(",")).mapToInt(Integer::parseInt).toArray();
    int keys = Integer.parseInt(o.getOrDefault("keys", "1000"));
    int poolSize = Integer.parseInt(o.getOrDefault("pool", "16"));
    int flushKeys = Integer.parseInt(o.getOrDefault("flush-keys", "10000"));
    LocalServer server = null;
    String uri = o.get("uri");
    if (uri == null) {
      server = LocalServer.start(o.getOrDefault("synchronous-commit", "on"));
      uri = server.uri();
      LocalServer started = server;
      Runtime.getRuntime().addShutdownHook(new Thread(() -> { // also when interrupted
        try {
          started.stop();
        } catch (IOException | InterruptedException | RuntimeException e) {
          // stopped already
        }
      }));
    }
    try {
      run(uri, seconds, threads, keys, poolSize, flushKeys);
    } finally {
      if (server != null) {
        server.stop();
      }
    }
  }

  private static void run(String uri, double seconds, int[] threadCounts, int keys, int poolSize, int flushKeys)
      throws Exception {
    String jdbc = "jdbc:" + uri.replaceFirst("^postgres(ql)?://([^@/]*)@", "postgresql://").replaceFirst("\\?.*", "")
        + (uri.contains("@") ? "?user=" + uri.replaceFirst("^postgres(ql)?://", "").replaceFirst("@.*", "") : "");
    HikariConfig config = new HikariConfig();
    config.setJdbcUrl(jdbc);
    config.setMaximumPoolSize(poolSize);
    config.setMinimumIdle(poolSize);
    config.setPoolName("bench");
    try (HikariDataSource ds = new HikariDataSource(config)) {
      try (Connection c = ds.getConnection(); Statement s = c.createStatement()) {
        s.execute("DROP TABLE IF EXISTS tally, tally_ops, bucket, counters, episodes, tally_flush CASCADE");
        s.execute(PostgresSchema.storeDdl("tally"));
        s.execute(PostgresSchema.ledgerDdl("tally_flush"));
        s.execute("CREATE TABLE bucket (id bigint PRIMARY KEY, state bytea)");
        s.execute("CREATE TABLE counters (k text PRIMARY KEY, v bigint NOT NULL)");
        s.execute("INSERT INTO counters SELECT 'c' || i, 0 FROM generate_series(0, " + (keys - 1) + ") i");
        s.execute("CREATE TABLE episodes (id bigint PRIMARY KEY, views bigint NOT NULL DEFAULT 0)");
        s.execute("INSERT INTO episodes (id) SELECT generate_series(0, " + (flushKeys - 1) + ")");
        s.execute("SELECT version()");
      }
      PostgresDataSources.register("bench", ds);
      List<Row> rows = new ArrayList<>();
      try (Tally tally = Tally.open("postgresql:?datasource=bench&table=tally&sweep=0");
          Tally waiting = Tally.open("postgresql:?datasource=bench&table=tally&sweep=0&limiterCommit=server")) {
        // A bucket so large that every request is granted: each decision writes the new state.
        long capacity = 1_000_000_000L;
        Limit limit = Limit.tokenBucket(capacity, Duration.ofSeconds(1));
        RateLimiter[] tallyLimiters = new RateLimiter[keys];
        RateLimiter[] waitingLimiters = new RateLimiter[keys];
        for (int k = 0; k < keys; k++) {
          tallyLimiters[k] = tally.limiter("bench:limiter:" + k, limit);
          waitingLimiters[k] = waiting.limiter("bench:limiter:" + k, limit);
        }
        ProxyManager<Long> bucket4j = Bucket4jPostgreSQL.selectForUpdateBasedBuilder(ds).build();
        BucketConfiguration b4jConfig = BucketConfiguration.builder()
            .addLimit(l -> l.capacity(capacity).refillGreedy(capacity, Duration.ofSeconds(1))).build();
        Bucket[] buckets = new Bucket[keys];
        for (int k = 0; k < keys; k++) {
          buckets[k] = bucket4j.builder().build((long) k, () -> b4jConfig);
        }
        Counters counters = tally.counters();
        for (int t : threadCounts) {
          settle(ds);
          rows.add(measure("limiter", "Tally token bucket", t, seconds, keys, (th, k) -> {
            if (!tallyLimiters[(int) k].tryAcquire()) {
              throw new IllegalStateException("denied");
            }
          }));
          settle(ds);
          rows.add(measure("limiter", "Tally token bucket, limiterCommit=server", t, seconds, keys, (th, k) -> {
            if (!waitingLimiters[(int) k].tryAcquire()) {
              throw new IllegalStateException("denied");
            }
          }));
          settle(ds);
          rows.add(measure("limiter", "Bucket4j 8.14 PostgreSQL (select for update)", t, seconds, keys, (th, k) -> {
            if (!buckets[(int) k].tryConsume(1)) {
              throw new IllegalStateException("denied");
            }
          }));
          settle(ds);
          rows.add(measure("incr", "Tally incr", t, seconds, keys, (th, k) -> counters.incr("c" + k)));
          settle(ds);
          rows.add(measure("incr", "UPDATE ... RETURNING (same pool)", t, seconds, keys, (th, k) -> {
            try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("UPDATE counters SET v = v + 1 WHERE k = ? RETURNING v")) {
              ps.setString(1, "c" + k);
              try (ResultSet rs = ps.executeQuery()) {
                rs.next();
              }
            }
          }));
        }
        print(rows);
        flush(ds, tally, flushKeys);
      } finally {
        PostgresDataSources.unregister("bench");
      }
    }
  }

  /**
   * Lets every client start from the same database: without it, the autovacuum and checkpoint
   * work that one client's writes leave behind (tens of thousands of updated rows) runs during
   * the next client's measurement and is charged to it.
   */
  private static void settle(HikariDataSource ds) throws SQLException {
    try (Connection c = ds.getConnection(); java.sql.Statement st = c.createStatement()) {
      st.execute("VACUUM");
      try {
        st.execute("CHECKPOINT");
      } catch (SQLException notSuperuser) {
        System.err.println("CHECKPOINT refused (" + notSuperuser.getMessage().trim() + "); VACUUM only");
      }
    }
  }

  /** Counts moved per second by one flush of {@code n} keys, from mem: and from the PostgreSQL store. */
  private static void flush(HikariDataSource ds, Tally postgres, int n) throws SQLException {
    System.out.println();
    System.out.println("flush: " + n + " keys, each with a count of 1 to 100, into UPDATE episodes SET views = views + ?");
    System.out.printf(Locale.ROOT, "%-22s %10s %12s %14s %14s%n", "source", "seconds", "batches", "keys/s", "units/s");
    try (Tally mem = Tally.open("mem:")) {
      for (Tally source : List.of(mem, postgres)) {
        Counters c = source.counters();
        long units = 0;
        for (int i = 0; i < n; i++) {
          int v = 1 + ThreadLocalRandom.current().nextInt(100);
          c.incr("views:episode:" + i, v);
          units += v;
        }
        try (Flush flush = Flush.from(source, "views:episode:")
            .into(ds, "UPDATE episodes SET views = views + :count WHERE id = :suffix::bigint").build()) {
          long start = System.nanoTime();
          FlushResult r = flush.run();
          double s = (System.nanoTime() - start) / 1e9;
          if (r.total() != units || r.keys() != n) {
            throw new IllegalStateException("flushed " + r + ", expected " + n + " keys and " + units + " units");
          }
          System.out.printf(Locale.ROOT, "%-22s %10.2f %12d %14.0f %14.0f%n", source.uri().replaceAll("\\?.*", ""), s,
              r.batches(), n / s, units / s);
        }
      }
    }
    try (Connection c = ds.getConnection(); Statement s = c.createStatement();
        ResultSet rs = s.executeQuery("SELECT count(*), sum(views) FROM episodes WHERE views > 0")) {
      rs.next();
      System.out.println("episodes with views: " + rs.getLong(1) + ", total views " + rs.getLong(2));
    }
  }

  private static Row measure(String part, String name, int threads, double seconds, int keys, Op op)
      throws InterruptedException {
    // warm up: a second of the same work
    run(threads, Math.min(1.0, seconds / 3), keys, op, null);
    List<long[]> latencies = new ArrayList<>();
    long[] counts = run(threads, seconds, keys, op, latencies);
    long total = Arrays.stream(counts).sum();
    long[] all = latencies.stream().flatMapToLong(Arrays::stream).filter(x -> x > 0).sorted().toArray();
    double p50 = all.length == 0 ? 0 : all[all.length / 2] / 1e3;
    double p99 = all.length == 0 ? 0 : all[(int) (all.length * 0.99)] / 1e3;
    Row r = new Row(part, name, threads, total, seconds, p50, p99);
    System.err.printf(Locale.ROOT, "%-8s %-46s %3d threads %10.0f/s%n", part, name, threads, r.rate());
    return r;
  }

  private static long[] run(int threads, double seconds, int keys, Op op, List<long[]> latencies)
      throws InterruptedException {
    long[] counts = new long[threads];
    AtomicReference<Throwable> failure = new AtomicReference<>();
    CountDownLatch start = new CountDownLatch(1);
    long deadline = System.nanoTime() + (long) (seconds * 1e9);
    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      int th = i;
      long[] lat = new long[200_000];
      if (latencies != null) {
        latencies.add(lat);
      }
      Thread t = new Thread(() -> {
        try {
          start.await();
          ThreadLocalRandom rnd = ThreadLocalRandom.current();
          long n = 0;
          while (System.nanoTime() < deadline) {
            long t0 = System.nanoTime();
            op.run(th, rnd.nextInt(keys));
            long t1 = System.nanoTime();
            lat[(int) (n % lat.length)] = t1 - t0;
            n++;
          }
          counts[th] = n;
        } catch (Throwable e) {
          failure.compareAndSet(null, e);
        }
      });
      t.start();
      ts.add(t);
    }
    start.countDown();
    for (Thread t : ts) {
      t.join();
    }
    if (failure.get() != null) {
      throw new IllegalStateException("a benchmark thread failed", failure.get());
    }
    return counts;
  }

  private static void print(List<Row> rows) {
    System.out.println();
    System.out.printf(Locale.ROOT, "%-8s %-46s %8s %12s %10s %10s %12s%n", "part", "client", "threads", "ops/s",
        "p50 us", "p99 us", "vs peer");
    for (Row r : rows) {
      Row peer = rows.stream().filter(x -> x.part().equals(r.part()) && x.threads() == r.threads() && !x.name().startsWith("Tally"))
          .findFirst().orElse(r);
      String ratio = r.name().startsWith("Tally") ? String.format(Locale.ROOT, "%.2fx", r.rate() / peer.rate()) : "";
      System.out.printf(Locale.ROOT, "%-8s %-46s %8d %12.0f %10.0f %10.0f %12s%n", r.part(), r.name(), r.threads(),
          r.rate(), r.p50us(), r.p99us(), ratio);
    }
  }

  /** A PostgreSQL server of the harness's own: initdb and pg_ctl on a free loopback port. */
  static final class LocalServer {
    private final Path dir;
    private final Path bin;
    private final int port;
    private final boolean root;

    private LocalServer(Path dir, Path bin, int port, boolean root) {
      this.dir = dir;
      this.bin = bin;
      this.port = port;
      this.root = root;
    }

    static LocalServer start(String synchronousCommit) throws IOException, InterruptedException {
      Path bin = null;
      try (var versions = Files.list(Path.of("/usr/lib/postgresql"))) {
        bin = versions.map(v -> v.resolve("bin")).filter(b -> Files.isExecutable(b.resolve("initdb")))
            .max(Path::compareTo).orElse(null);
      } catch (IOException e) {
        // try the PATH
      }
      if (bin == null) {
        bin = Path.of("/usr/local/bin");
      }
      boolean root = "root".equals(System.getProperty("user.name"));
      Path dir = Files.createTempDirectory(Path.of("/tmp"), "tally-bench-pg-");
      if (root) {
        UserPrincipal pg = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("postgres");
        Files.setOwner(dir, pg);
      }
      int port;
      try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
        port = s.getLocalPort();
      }
      LocalServer server = new LocalServer(dir, bin, port, root);
      server.exec("initdb", "-D", dir.resolve("data").toString(), "-A", "trust", "-U", "tally", "-E", "UTF8", "--locale=C");
      server.exec("pg_ctl", "-D", dir.resolve("data").toString(), "-l", dir.resolve("log").toString(), "-w",
          "-o", "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1 -c max_connections=200"
          + " -c synchronous_commit=" + synchronousCommit, "start");
      return server;
    }

    String uri() {
      return "postgresql://tally@127.0.0.1:" + port + "/postgres";
    }

    void stop() throws IOException, InterruptedException {
      exec("pg_ctl", "-D", dir.resolve("data").toString(), "-m", "fast", "-w", "stop");
    }

    private void exec(String tool, String... args) throws IOException, InterruptedException {
      List<String> cmd = new ArrayList<>();
      if (root) {
        cmd.addAll(List.of("runuser", "-u", "postgres", "--"));
      }
      cmd.add(bin.resolve(tool).toString());
      cmd.addAll(List.of(args));
      Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve(tool + ".out").toFile()).start();
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", cmd) + " failed: " + Files.readString(dir.resolve(tool + ".out")));
      }
    }
  }

}
