package dev.tally.dynamodb;

import dev.tally.tck.ServerFreeze;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.TransactGetItem;

/**
 * The DynamoDB the tests run against: dynalite (installed in this module by {@code npm ci}),
 * started once per test JVM on a free loopback port and killed when the JVM exits. Set
 * {@code TALLY_DYNAMODB_ENDPOINT} to run the tests against another server instead.
 *
 * <p>dynalite implements neither transactions nor TTL deletion; {@link #supportsTransactions}
 * probes the server, so the transaction tests run wherever the server has them.
 *
 * <p>The dynalite started here can be frozen ({@link #FREEZE}): {@code SIGSTOP} to its node
 * process, started directly (no npm or npx wrapper whose pid would be the wrong one to stop), and
 * to any process node started; {@code SIGCONT} resumes them. The kernel keeps accepting
 * connections and buffering requests meanwhile, so a client sees a server that hears and never
 * answers, as with a hung host.
 */
final class Dynalite {
  static final String TABLE = "tally-test";
  private static volatile String endpoint;
  private static volatile Boolean transactions;
  private static final Map<String, Boolean> tables = new ConcurrentHashMap<>();
  private static volatile Process process; // null until started here, and with a given endpoint

  /** Freezes and resumes the dynalite started here, for the kit's server-fault case. */
  static final ServerFreeze FREEZE = new ServerFreeze() {
    @Override
    public void freeze() {
      Dynalite.freeze();
    }

    @Override
    public void resume() {
      Dynalite.resume();
    }
  };

  private Dynalite() {}

  /** The server's endpoint, starting dynalite on first use. */
  static synchronized String endpoint() {
    if (endpoint == null) {
      String given = System.getenv("TALLY_DYNAMODB_ENDPOINT");
      endpoint = given != null && !given.isBlank() ? given : start();
    }
    return endpoint;
  }

  /** Whether the tests start dynalite themselves (no TALLY_DYNAMODB_ENDPOINT), so can freeze it. */
  static boolean freezable() {
    String given = System.getenv("TALLY_DYNAMODB_ENDPOINT");
    return given == null || given.isBlank();
  }

  /** Stops dynalite (and anything it started) until {@link #resume()}. */
  static void freeze() {
    signal("STOP");
  }

  /** Lets a frozen dynalite run again. */
  static void resume() {
    signal("CONT");
  }

  private static void signal(String signal) {
    endpoint();
    Process p = process;
    if (p == null) {
      throw new IllegalStateException("dynalite at " + endpoint + " was not started by the tests"
          + " (TALLY_DYNAMODB_ENDPOINT): it cannot be frozen");
    }
    List<String> command = new ArrayList<>(List.of("kill", "-" + signal, Long.toString(p.pid())));
    p.descendants().forEach(d -> command.add(Long.toString(d.pid())));
    try {
      Process kill = new ProcessBuilder(command).redirectErrorStream(true).start();
      String said = new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (kill.waitFor() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " failed: " + said);
      }
    } catch (IOException e) {
      throw new IllegalStateException("could not run " + String.join(" ", command), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while sending SIG" + signal + " to dynalite", e);
    }
  }

  /** A store URI on table {@code table} (created if needed) keyed by {@code key}, plus options. */
  static String tableUri(String table, String key, String... options) {
    String base = "dynamodb://" + table + "?endpoint=" + endpoint() + "&key=" + key
        + "&accessKey=test&secretKey=test%2Bsecret&region=us-east-1";
    tables.computeIfAbsent(table + "/" + key, k -> {
      DynamoDbTables.create(base);
      return true;
    });
    StringBuilder uri = new StringBuilder(base);
    for (String o : options) {
      uri.append('&').append(o);
    }
    return uri.toString();
  }

  /** The shared test table, keyed by {@code key}. */
  static String uri(String... options) {
    return tableUri(TABLE, "key", options);
  }

  /** Whether the server implements TransactGetItems and TransactWriteItems. */
  static synchronized boolean supportsTransactions() {
    if (transactions == null) {
      Options o = Options.parse(uri());
      try (Clients c = new Clients(o, List.of())) {
        c.counters.transactGetItems(b -> b.transactItems(TransactGetItem.builder()
            .get(g -> g.tableName(TABLE).key(Map.of("key", AttributeValue.fromS("probe")))).build()));
        transactions = true;
      } catch (RuntimeException e) {
        if (!Errors.unknownOperation(e)) {
          throw e;
        }
        transactions = false;
      }
    }
    return transactions;
  }

  private static String start() {
    File cli = new File("node_modules/dynalite/cli.js").getAbsoluteFile();
    if (!cli.isFile()) {
      throw new IllegalStateException("dynalite is not installed at " + cli + ": run"
          + " `(cd tally-dynamodb && npm ci --no-audit --no-fund)` first (the DynamoDB tests start it)");
    }
    int port = freePort();
    ProcessBuilder pb = new ProcessBuilder("node", cli.getPath(), "--host", "127.0.0.1",
        "--port", Integer.toString(port), "--createTableMs", "0", "--deleteTableMs", "0",
        "--updateTableMs", "0").redirectErrorStream(true);
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new IllegalStateException("could not run `node` from PATH to start dynalite: " + e.getMessage()
          + ". Install Node.js 20 or later", e);
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      p.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
      p.destroyForcibly(); // SIGKILL: a frozen node would not act on SIGTERM before SIGCONT
      try {
        p.waitFor(5, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "dynalite-stop"));
    CountDownLatch listening = new CountDownLatch(1);
    StringBuilder output = new StringBuilder();
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          synchronized (output) {
            if (output.length() < 10_000) {
              output.append(line).append('\n');
            }
          }
          if (line.contains("listening")) {
            listening.countDown();
          }
        }
      } catch (IOException ignored) {
        // the process ended
      }
    }, "dynalite-output");
    reader.setDaemon(true);
    reader.start();
    try {
      if (!listening.await(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("dynalite did not start within 30 s; its output:\n" + output);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    process = p;
    // A dynalite that dies under the tests fails them all with refused connections: say why.
    p.onExit().thenAccept(gone -> {
      synchronized (output) {
        System.out.println("[dynalite] exited with " + gone.exitValue() + "; its output:\n" + output);
      }
    });
    System.out.println("[dynalite] listening on 127.0.0.1:" + port + " (pid " + p.pid() + ")");
    return "http://127.0.0.1:" + port;
  }

  private static int freePort() {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
