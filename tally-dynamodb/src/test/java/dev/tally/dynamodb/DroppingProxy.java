package dev.tally.dynamodb;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

/**
 * A DynamoDB endpoint in front of a real one (dynalite) that forwards every request, and for the
 * writes {@link #drop} picks, lets the server apply it and then closes the connection instead of
 * answering: the client sees a lost answer to a write that did apply, the case a retry can count
 * twice. A plain HTTP/1.1 proxy over sockets, so that it can drop a connection mid-exchange.
 */
final class DroppingProxy implements AutoCloseable {
  private static final Set<String> HOP = Set.of("host", "content-length", "connection", "expect",
      "transfer-encoding", "upgrade", "keep-alive");

  private final ServerSocket listener;
  private final URI target;
  private final HttpClient http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
  private final ExecutorService pool = Executors.newCachedThreadPool(r -> {
    Thread t = new Thread(r, "dropping-proxy");
    t.setDaemon(true);
    return t;
  });
  private final Predicate<String> drop;
  /** Writes applied by the server whose answer was dropped, by operation. */
  final Map<String, AtomicInteger> dropped = new java.util.concurrent.ConcurrentHashMap<>();
  /** Requests forwarded, by operation. */
  final Map<String, AtomicInteger> forwarded = new java.util.concurrent.ConcurrentHashMap<>();

  /**
   * @param target the real endpoint
   * @param drop given the operation (e.g. UpdateItem), whether to drop this request's answer
   */
  DroppingProxy(String target, Predicate<String> drop) throws IOException {
    this.target = URI.create(target);
    this.drop = drop;
    this.listener = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
    pool.execute(this::accept);
  }

  String endpoint() {
    return "http://127.0.0.1:" + listener.getLocalPort();
  }

  int dropped(String operation) {
    AtomicInteger n = dropped.get(operation);
    return n == null ? 0 : n.get();
  }

  int forwarded(String operation) {
    AtomicInteger n = forwarded.get(operation);
    return n == null ? 0 : n.get();
  }

  private void accept() {
    while (!listener.isClosed()) {
      try {
        Socket s = listener.accept();
        pool.execute(() -> serve(s));
      } catch (IOException closed) {
        return;
      }
    }
  }

  private void serve(Socket s) {
    try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
      for (;;) {
        String head = readHead(in);
        if (head == null) {
          return;
        }
        String[] lines = head.split("\r\n");
        String[] requestLine = lines[0].split(" ");
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
          int colon = lines[i].indexOf(':');
          headers.put(lines[i].substring(0, colon).trim(), lines[i].substring(colon + 1).trim());
        }
        int length = 0;
        String operation = "?";
        for (Map.Entry<String, String> h : headers.entrySet()) {
          if (h.getKey().equalsIgnoreCase("content-length")) {
            length = Integer.parseInt(h.getValue());
          } else if (h.getKey().equalsIgnoreCase("x-amz-target")) {
            operation = h.getValue().substring(h.getValue().indexOf('.') + 1);
          }
        }
        byte[] body = in.readNBytes(length);
        HttpRequest.Builder forward = HttpRequest.newBuilder(target.resolve(requestLine[1]))
            .method(requestLine[0], HttpRequest.BodyPublishers.ofByteArray(body));
        for (Map.Entry<String, String> h : headers.entrySet()) {
          if (!HOP.contains(h.getKey().toLowerCase(Locale.ROOT))) {
            forward.header(h.getKey(), h.getValue());
          }
        }
        HttpResponse<byte[]> response = http.send(forward.build(), HttpResponse.BodyHandlers.ofByteArray());
        forwarded.computeIfAbsent(operation, k -> new AtomicInteger()).incrementAndGet();
        if (drop.test(operation)) {
          dropped.computeIfAbsent(operation, k -> new AtomicInteger()).incrementAndGet();
          return; // applied, and the answer never arrives: the connection closes
        }
        StringBuilder reply = new StringBuilder("HTTP/1.1 " + response.statusCode() + " X\r\n");
        response.headers().map().forEach((name, values) -> {
          if (!HOP.contains(name.toLowerCase(Locale.ROOT)) && !name.startsWith(":")) {
            for (String v : values) {
              reply.append(name).append(": ").append(v).append("\r\n");
            }
          }
        });
        reply.append("Content-Length: ").append(response.body().length).append("\r\n\r\n");
        out.write(reply.toString().getBytes(StandardCharsets.ISO_8859_1));
        out.write(response.body());
        out.flush();
      }
    } catch (IOException | RuntimeException e) {
      // the client went away, or the proxy closed
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  /** The request line and headers, or null at the end of the stream. */
  private static String readHead(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    int state = 0;
    for (;;) {
      int c = in.read();
      if (c < 0) {
        return null;
      }
      b.write(c);
      state = (c == '\r' && (state == 0 || state == 2)) ? state + 1 : (c == '\n' && (state == 1 || state == 3)) ? state + 1 : 0;
      if (state == 4) {
        String head = b.toString(StandardCharsets.ISO_8859_1);
        return head.substring(0, head.length() - 4);
      }
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
    pool.shutdownNow();
  }
}
