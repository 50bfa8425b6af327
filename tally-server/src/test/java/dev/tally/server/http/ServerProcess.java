package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code tally serve} process: {@code java -jar target/tally.jar serve --port 0 ...}, its
 * address read from the "listening on" line it prints. Requests go to loopback only.
 */
final class ServerProcess implements AutoCloseable, LoopbackHttp {
  static final Path JAR = Path.of(System.getProperty("tally.jar", "target/tally.jar"));

  final Process process;
  final URI uri;
  private final Path stderr;
  private final BufferedReader stdout;

  private ServerProcess(Process process, URI uri, Path stderr, BufferedReader stdout) {
    this.process = process;
    this.uri = uri;
    this.stderr = stderr;
    this.stdout = stdout;
  }

  /** The next line the server prints after "listening on" (e.g. "grpc listening on"). */
  String nextLine() throws IOException {
    return stdout.readLine();
  }

  static List<String> command(String... args) {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-XX:+UseSerialGC", "-Xmx256m", "-jar", JAR.toString(), "serve", "--port", "0"));
    cmd.addAll(List.of(args));
    return cmd;
  }

  /** Starts {@code tally serve --port 0 ARGS} and waits until it listens. */
  static ServerProcess start(Map<String, String> env, String... args) throws IOException {
    ProcessBuilder pb = new ProcessBuilder(command(args));
    pb.environment().remove("TALLY_TOKEN");
    pb.environment().remove("TALLY_STORE");
    pb.environment().putAll(env);
    // A file, not a pipe: a pipe being read while the process exits can lose its last lines.
    Path err = Files.createTempFile("tally-serve", ".stderr");
    err.toFile().deleteOnExit();
    pb.redirectError(err.toFile());
    Process p = pb.start();
    BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8));
    String line = out.readLine(); // blocks until the line, or EOF if the process died
    if (line == null || !line.startsWith("listening on ")) {
      p.destroyForcibly();
      throw new IllegalStateException("server did not start: " + line + "\n" + Files.readString(err));
    }
    return new ServerProcess(p, URI.create(line.substring("listening on ".length()).strip()), err,
        out);
  }

  static ServerProcess start(String... args) throws IOException {
    return start(Map.of(), args);
  }

  @Override
  public int port() {
    return uri.getPort();
  }

  /** What the server has written to stderr. */
  String stderr() throws IOException {
    return Files.readString(stderr);
  }

  /** SIGTERM, then the exit code. */
  int stop() throws InterruptedException {
    process.destroy();
    assertThat(process.waitFor(20, TimeUnit.SECONDS)).as("exits after SIGTERM").isTrue();
    return process.exitValue();
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      process.destroy();
      try {
        if (!process.waitFor(20, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
        Thread.currentThread().interrupt();
      }
    }
  }
}
