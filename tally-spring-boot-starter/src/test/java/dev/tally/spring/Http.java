package dev.tally.spring;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;

/** Real HTTP requests to an application under test. */
public final class Http {
  private static final HttpClient CLIENT = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();

  private final String base;

  public Http(int port) {
    this.base = "http://127.0.0.1:" + port;
  }

  public HttpResponse<String> get(String path, String... headers) {
    return send(request(path, headers).GET().build());
  }

  public HttpResponse<String> post(String path, String... headers) {
    return send(request(path, headers).POST(HttpRequest.BodyPublishers.noBody()).build());
  }

  private HttpRequest.Builder request(String path, String... headers) {
    HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(30));
    if (headers.length > 0) {
      b.headers(headers);
    }
    return b;
  }

  private static HttpResponse<String> send(HttpRequest request) {
    try {
      return CLIENT.send(request, HttpResponse.BodyHandlers.ofString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
