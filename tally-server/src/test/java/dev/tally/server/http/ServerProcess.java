package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real {@code tally serve} process: {@code java -jar target/tally.jar serve --port 0 ...}, its
 * address read from the "listening on" line it prints. Requests go to loopback only.
 */
final class ServerProcess implements AutoCloseable {
  static final Path JAR = Path.of(System.getProperty("tally.jar", "target/tally.jar"));
  static final HttpClient HTTP = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5))
      .build();

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

  /** The loopback address of this server, whatever it was bound to. */
  URI loopback(String pathAndQuery) {
    return URI.create("http://127.0.0.1:" + uri.getPort() + pathAndQuery);
  }

  HttpResponse<String> send(String method, String path, String body, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(loopback(path))
        .timeout(Duration.ofSeconds(20))
        .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
            : HttpRequest.BodyPublishers.ofString(body));
    if (headers.length > 0) {
      b.headers(headers);
    }
    boolean typed = false;
    for (int i = 0; i < headers.length; i += 2) {
      typed |= headers[i].equalsIgnoreCase("Content-Type");
    }
    if (body != null && !typed) {
      b.header("Content-Type", "application/json"); // mutating routes take JSON only
    }
    try {
      return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  HttpResponse<String> get(String path) {
    return send("GET", path, null);
  }

  HttpResponse<String> post(String path, String body) {
    return send("POST", path, body);
  }

  /** What the server has written to stderr. */
  String stderr() throws IOException {
    return Files.readString(stderr);
  }

  /** Sends one raw HTTP/1.1 request (for what HttpClient refuses to send) and returns the response. */
  String raw(String requestLine) throws IOException {
    try (java.net.Socket s = new java.net.Socket("127.0.0.1", uri.getPort())) {
      s.setSoTimeout(20_000);
      s.getOutputStream().write((requestLine + "\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
          + "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
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
