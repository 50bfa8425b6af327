package dev.tally.server.http;

import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

/** Requests to a server listening on 127.0.0.1, whatever address it was bound to. */
interface LoopbackHttp {
  HttpClient HTTP = HttpClient.newBuilder()
      .version(HttpClient.Version.HTTP_1_1)
      .connectTimeout(Duration.ofSeconds(5))
      .build();

  /** The port the server listens on. */
  int port();

  /** The loopback address of this server, whatever it was bound to. */
  default URI loopback(String pathAndQuery) {
    return URI.create("http://127.0.0.1:" + port() + pathAndQuery);
  }

  default HttpResponse<String> send(String method, String path, String body, String... headers) {
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

  default HttpResponse<String> get(String path) {
    return send("GET", path, null);
  }

  default HttpResponse<String> post(String path, String body) {
    return send("POST", path, body);
  }

  /** Sends one raw HTTP/1.1 request (for what HttpClient refuses to send) and returns the response. */
  default String raw(String requestLine) throws IOException {
    try (Socket s = new Socket("127.0.0.1", port())) {
      s.setSoTimeout(20_000);
      s.getOutputStream().write((requestLine + "\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
          + "Connection: close\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
