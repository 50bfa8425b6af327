package dev.tally.jdbc;

import dev.tally.tck.ServerFreeze;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One real PostgreSQL server for tests: {@code initdb} into a temporary directory, then
 * {@code pg_ctl start} on a free loopback port, stopped (and its directory deleted) when the JVM
 * exits. PostgreSQL refuses to run as root, so as root the server runs as the {@code postgres}
 * user that Debian's package creates (through {@code runuser}); otherwise as the current user.
 *
 * <p>The binaries are those in {@code $TALLY_PG_BIN}, else the newest
 * {@code /usr/lib/postgresql/<version>/bin}, else {@code initdb} on the {@code PATH}; without any,
 * every PostgreSQL test fails at once, saying how to install them.
 *
 * <p>Faults: {@link #freeze} stops every process of the server ({@code SIGSTOP}), as a hung host
 * or a partition looks to a client: sockets open, nothing answers; {@link #crash} kills them all
 * ({@code SIGKILL}), as a power cut looks to a process, and {@link #restart} recovers from it.
 */
final class PostgresServer implements ServerFreeze {
  private static PostgresServer shared;

  private final Path dir;
  private final Path bin;
  private final int port;
  private final boolean asPostgres;

  private final List<String> settings;

  private PostgresServer(Path dir, Path bin, int port, boolean asPostgres, List<String> settings) {
    this.dir = dir;
    this.bin = bin;
    this.port = port;
    this.asPostgres = asPostgres;
    this.settings = settings;
  }

  /** The server every test class shares, started on first use, with the store schema applied. */
  static synchronized PostgresServer shared() {
    if (shared == null) {
      shared = start();
      shared.execute(PostgresSchema.storeDdl("tally"));
    }
    return shared;
  }

  static PostgresServer start() {
    return start(new String[0]);
  }

  /** A server of its own, with extra settings ({@code name=value}, as {@code postgres -c} takes). */
  static PostgresServer start(String... settings) {
    Path bin = binaries();
    boolean root = "root".equals(System.getProperty("user.name"));
    try {
      Path dir = Files.createTempDirectory(Path.of("/tmp"), "tally-pg-");
      Files.setPosixFilePermissions(dir, PosixFilePermissions.fromString("rwx------"));
      if (root) {
        UserPrincipal postgres = dir.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("postgres");
        Files.setOwner(dir, postgres);
      }
      int port = freePort();
      PostgresServer server = new PostgresServer(dir, bin, port, root, List.of(settings));
      server.run("initdb", "-D", dir.resolve("data").toString(), "-A", "trust", "-U", "tally", "-E", "UTF8",
          "--no-sync", "--locale=C");
      server.launch();
      Runtime.getRuntime().addShutdownHook(new Thread(server::stop, "postgres-test-server"));
      return server;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** {@code jdbc:}-less store URI of database {@code postgres}, with extra options. */
  String uri(String options) {
    return uriAs("tally", options);
  }

  /** The same as another role (which must exist). */
  String uriAs(String role, String options) {
    return "postgresql://" + role + "@127.0.0.1:" + port + "/postgres" + (options.isEmpty() ? "" : "?" + options);
  }

  String jdbcUrl() {
    return "jdbc:postgresql://127.0.0.1:" + port + "/postgres?user=tally";
  }

  int port() {
    return port;
  }

  Connection connect() throws SQLException {
    return DriverManager.getConnection(jdbcUrl());
  }

  void execute(String sql) {
    try (Connection c = connect(); Statement s = c.createStatement()) {
      s.execute(sql);
    } catch (SQLException e) {
      throw new IllegalStateException("cannot run on the test server: " + sql.lines().findFirst().orElse(""), e);
    }
  }

  void stop() {
    try {
      run("pg_ctl", "-D", dir.resolve("data").toString(), "-m", "immediate", "-w", "stop");
    } catch (RuntimeException e) {
      // already stopped
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException e) {
      // leave it for the OS's /tmp cleaning
    }
  }

  /** Stops the postmaster, then every process it started (they can start no others meanwhile). */
  @Override
  public void freeze() {
    ProcessHandle postmaster = postmaster();
    signal("STOP", List.of(postmaster));
    signal("STOP", postmaster.children().toList());
  }

  @Override
  public void resume() {
    ProcessHandle postmaster = postmaster();
    signal("CONT", postmaster.children().toList());
    signal("CONT", List.of(postmaster));
  }

  /**
   * Kills the postmaster and every process it started at once, and waits for them to be gone:
   * nothing is written after, as in a crash of the host (the OS keeps what was written, so
   * {@code fsync=off} loses nothing here that a commit waited for).
   */
  void crash() {
    ProcessHandle postmaster = postmaster();
    List<ProcessHandle> all = new ArrayList<>(List.of(postmaster));
    all.addAll(postmaster.children().toList());
    // kill(2) from here, the postmaster first (it starts no child after): microseconds for all,
    // where spawning kill(1) would give the WAL writer time to write what a crash should lose
    all.forEach(ProcessHandle::destroyForcibly);
    for (ProcessHandle p : all) {
      try {
        p.onExit().get(30, TimeUnit.SECONDS);
      } catch (Exception e) {
        throw new IllegalStateException("PostgreSQL process " + p.pid() + " survived SIGKILL", e);
      }
    }
  }

  /** Starts the server again on its data directory, on the same port: crash recovery runs first. */
  void restart() {
    launch();
  }

  private void launch() {
    run("pg_ctl", "-D", dir.resolve("data").toString(), "-l", dir.resolve("log").toString(), "-w",
        "-t", "60", "-o", startOptions(), "start");
  }

  private String startOptions() {
    return "-p " + port + " -k " + dir + " -c listen_addresses=127.0.0.1 -c fsync=off"
        + " -c synchronous_commit=off -c full_page_writes=off -c max_connections=300"
        + settings.stream().map(setting -> " -c " + setting).collect(java.util.stream.Collectors.joining());
  }

  private ProcessHandle postmaster() {
    try {
      long pid = Long.parseLong(Files.readAllLines(dir.resolve("data").resolve("postmaster.pid")).get(0).trim());
      return ProcessHandle.of(pid).orElseThrow(() -> new IllegalStateException("PostgreSQL is not running"));
    } catch (IOException e) {
      throw new UncheckedIOException("PostgreSQL is not running: no postmaster.pid", e);
    }
  }

  private static void signal(String signal, List<ProcessHandle> processes) {
    if (processes.isEmpty()) {
      return;
    }
    List<String> command = new ArrayList<>(List.of("kill", "-" + signal));
    processes.forEach(p -> command.add(String.valueOf(p.pid())));
    try {
      Process kill = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(kill.getInputStream().readAllBytes());
      // a backend may exit between the listing and the signal: only a refusal of all counts
      if (!kill.waitFor(10, TimeUnit.SECONDS) || (kill.exitValue() != 0 && !out.contains("No such process"))) {
        throw new IllegalStateException(String.join(" ", command) + " failed: " + out);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private void run(String tool, String... args) {
    List<String> command = new ArrayList<>();
    if (asPostgres) {
      command.addAll(List.of("runuser", "-u", "postgres", "--"));
    }
    command.add(bin.resolve(tool).toString());
    command.addAll(List.of(args));
    try {
      Process p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
      byte[] out = p.getInputStream().readAllBytes();
      if (!p.waitFor(120, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " failed:\n" + new String(out)
            + readLog());
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot run " + command, e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  private String readLog() {
    try {
      Path log = dir.resolve("log");
      return Files.exists(log) ? "\nserver log:\n" + Files.readString(log) : "";
    } catch (IOException e) {
      return "";
    }
  }

  private static Path binaries() {
    String env = System.getenv("TALLY_PG_BIN");
    if (env != null && Files.isExecutable(Path.of(env, "initdb"))) {
      return Path.of(env);
    }
    try (Stream<Path> versions = Files.list(Path.of("/usr/lib/postgresql"))) {
      Path newest = versions.map(v -> v.resolve("bin"))
          .filter(b -> Files.isExecutable(b.resolve("initdb")) && Files.isExecutable(b.resolve("pg_ctl")))
          .max(Comparator.comparingInt(b -> version(b.getParent().getFileName().toString()))).orElse(null);
      if (newest != null) {
        return newest;
      }
    } catch (IOException e) {
      // no Debian layout: try the PATH
    }
    for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
      if (!d.isEmpty() && Files.isExecutable(Path.of(d, "initdb")) && Files.isExecutable(Path.of(d, "pg_ctl"))) {
        return Path.of(d);
      }
    }
    throw new IllegalStateException("PostgreSQL's initdb and pg_ctl were found neither in $TALLY_PG_BIN,"
        + " /usr/lib/postgresql/*/bin nor on the PATH: install them (apt-get install postgresql)");
  }

  private static int version(String name) {
    try {
      return Integer.parseInt(name);
    } catch (NumberFormatException e) {
      return -1;
    }
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    }
  }
}
