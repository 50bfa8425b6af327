package dev.tally.bench;

import dev.tally.dynamodb.DynamoDbTables;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;

/**
 * A store for a comparison run, by a short name: {@code mem:}; {@code file:} in a temporary
 * directory; {@code redis}, a {@code redis-server} of its own; {@code postgresql}, a PostgreSQL of
 * its own (Debian's binaries) with the store's table; {@code dynamodb}, dynalite from
 * {@code tally-dynamodb/node_modules} (run {@code (cd tally-dynamodb && npm ci)} first) with a
 * table. Closing it stops the server.
 */
record BenchStore(String uri, AutoCloseable server) implements AutoCloseable {

  static BenchStore start(String name) throws Exception {
    switch (name) {
      case "mem:" -> {
        return new BenchStore("mem:", () -> { });
      }
      case "file:" -> {
        return new BenchStore("file:" + Files.createTempDirectory("tally-bench").resolve("data"), () -> { });
      }
      case "redis" -> {
        LocalRedis redis = LocalRedis.start();
        return new BenchStore(redis.uri(), redis);
      }
      case "postgresql" -> {
        PostgresComparison.LocalServer pg = PostgresComparison.LocalServer.start("on");
        String uri = pg.uri();
        String jdbc = "jdbc:" + uri.replaceFirst("^postgres(ql)?://([^@/]*)@", "postgresql://").replaceFirst("\\?.*", "")
            + "?user=" + uri.replaceFirst("^postgres(ql)?://", "").replaceFirst("@.*", "");
        try (java.sql.Connection c = java.sql.DriverManager.getConnection(jdbc);
            java.sql.Statement st = c.createStatement()) {
          st.execute(dev.tally.jdbc.PostgresSchema.storeDdl("tally"));
        }
        return new BenchStore(uri, pg::stop);
      }
      case "dynamodb" -> {
        int port = LocalRedis.freePort();
        Process dynalite = startDynalite(port);
        String uri = "dynamodb://hot?endpoint=http://127.0.0.1:" + port
            + "&accessKey=test&secretKey=test%2Bsecret&region=us-east-1";
        DynamoDbTables.create(uri);
        return new BenchStore(uri, () -> {
          dynalite.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
          dynalite.destroyForcibly();
        });
      }
      default -> throw new IllegalArgumentException("unknown store " + name
          + "; use mem:, file:, redis, postgresql or dynamodb");
    }
  }

  @Override
  public void close() {
    try {
      server.close();
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      throw new IllegalStateException("stopping the store's server", e);
    }
  }

  private static Process startDynalite(int port) throws Exception {
    File cli = new File("tally-dynamodb/node_modules/dynalite/cli.js").getAbsoluteFile();
    if (!cli.isFile()) {
      throw new IllegalStateException("dynalite is not installed at " + cli
          + ": run `(cd tally-dynamodb && npm ci --no-audit --no-fund)` first, from the repository's root");
    }
    Process p = new ProcessBuilder("node", cli.getPath(), "--host", "127.0.0.1", "--port",
        Integer.toString(port), "--createTableMs", "0").redirectErrorStream(true).start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    for (String line = out.readLine(); ; line = out.readLine()) {
      if (line == null) {
        throw new IllegalStateException("dynalite exited before listening");
      }
      if (line.contains("listening")) {
        break;
      }
    }
    Thread drain = new Thread(() -> out.lines().forEach(l -> { }), "dynalite-output");
    drain.setDaemon(true);
    drain.start();
    return p;
  }
}
