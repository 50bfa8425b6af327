package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Clients that send part of a request and stop cost the server a timer each, not a thread:
 * 2,000 of them, of four kinds, are held open while {@code /ping} is probed, and it still
 * answers at once; then every one of them is closed by the request timeout (set to 10 s here, as
 * by default, so that the sockets can be opened on a busy machine before the first of them runs
 * out), with a 408, except the bad chunk size, which is answered 400 as soon as it is read.
 */
class SlowClientIT {
  private static final int SOCKETS = 2000;
  /** Long enough to open 2,000 sockets on a busy machine before the first is timed out. */
  private static final long TIMEOUT_MILLIS = 10_000;

  /** What each kind of held socket sends, and the status the server must end it with. */
  private enum Kind {
    PARTIAL_HEADERS("POST /v1/counters/s/incr HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Ty", 408),
    SHORT_BODY("POST /v1/counters/s/incr HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + "Content-Type: application/json\r\nContent-Length: 20\r\n\r\n{\"delta\":", 408),
    PARTIAL_CHUNK("POST /v1/counters/s/incr HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n8\r\n{\"de", 408),
    BAD_CHUNK_SIZE("POST /v1/counters/s/incr HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        + "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n", 400);

    final byte[] bytes;
    final int status;

    Kind(String text, int status) {
      this.bytes = text.getBytes(StandardCharsets.US_ASCII);
      this.status = status;
    }
  }

  @Test
  void halfSentRequestsDoNotSlowOthersAndAreAllClosedByTheRequestTimeout() throws Exception {
    try (ServerProcess server = ServerProcess.start("--store", "mem:", "--request-timeout",
        TIMEOUT_MILLIS + "ms");
        Selector selector = Selector.open()) {
      InetSocketAddress at = new InetSocketAddress("127.0.0.1", server.uri.getPort());
      Map<SocketChannel, Kind> held = new HashMap<>();
      Map<SocketChannel, StringBuilder> received = new HashMap<>();
      long firstSent = System.nanoTime();
      // opened from several threads: one would spend most of the time waiting on each connect
      List<Future<SocketChannel>> opening = new ArrayList<>();
      ExecutorService openers = Executors.newFixedThreadPool(8);
      try {
        for (int i = 0; i < SOCKETS; i++) {
          Kind kind = Kind.values()[i % Kind.values().length];
          opening.add(openers.submit(() -> {
            SocketChannel ch = SocketChannel.open(at);
            ByteBuffer b = ByteBuffer.wrap(kind.bytes);
            while (b.hasRemaining()) {
              ch.write(b);
            }
            ch.configureBlocking(false);
            return ch;
          }));
        }
        for (int i = 0; i < SOCKETS; i++) {
          SocketChannel ch = opening.get(i).get();
          ch.register(selector, SelectionKey.OP_READ);
          held.put(ch, Kind.values()[i % Kind.values().length]);
          received.put(ch, new StringBuilder());
        }
      } finally {
        openers.shutdown();
      }
      long lastSent = System.nanoTime();

      // Probed while the held requests are in progress: over keep-alive, as a health check would.
      long[] millis = probePing(at, 200);
      long probedBy = System.nanoTime();
      assertThat((probedBy - firstSent) / 1_000_000).as("probes ran while every socket was held")
          .isLessThan(TIMEOUT_MILLIS);
      Arrays.sort(millis);
      long p99 = millis[(int) Math.ceil(millis.length * 0.99) - 1];
      assertThat(p99).as("p99 of /ping in ms, with %d half-sent requests held", SOCKETS)
          .isLessThan(50);

      // Every held socket is closed by the server: 408 after the timeout, 400 for bad framing.
      Map<SocketChannel, Long> closedAt = new HashMap<>();
      ByteBuffer buf = ByteBuffer.allocate(4096);
      long giveUp = lastSent + (TIMEOUT_MILLIS + 10_000) * 1_000_000;
      while (closedAt.size() < SOCKETS && System.nanoTime() < giveUp) {
        selector.select(500);
        for (Iterator<SelectionKey> it = selector.selectedKeys().iterator(); it.hasNext(); ) {
          SelectionKey k = it.next();
          it.remove();
          SocketChannel ch = (SocketChannel) k.channel();
          buf.clear();
          int n;
          try {
            n = ch.read(buf);
          } catch (IOException reset) {
            n = -1;
          }
          if (n > 0) {
            received.get(ch).append(new String(buf.array(), 0, n, StandardCharsets.US_ASCII));
          } else if (n < 0) {
            closedAt.put(ch, System.nanoTime());
            k.cancel();
            ch.close();
          }
        }
      }
      assertThat(closedAt).as("held sockets closed by the server").hasSize(SOCKETS);
      Map<Kind, Integer> byKind = new HashMap<>();
      for (Map.Entry<SocketChannel, Kind> e : held.entrySet()) {
        Kind kind = e.getValue();
        String answer = received.get(e.getKey()).toString();
        assertThat(answer).as("answer to %s", kind).startsWith("HTTP/1.1 " + kind.status + " ");
        assertThat(answer).contains("application/problem+json");
        if (kind.status == 408) {
          // not before the timeout: measured from when the last socket was sent, so a lower bound
          assertThat(closedAt.get(e.getKey()) - firstSent).isGreaterThanOrEqualTo(
              TIMEOUT_MILLIS * 1_000_000 - (lastSent - firstSent));
        }
        byKind.merge(kind, 1, Integer::sum);
      }
      assertThat(byKind).hasSize(Kind.values().length);
      // nothing of the half-sent increments was applied
      assertThat(server.get("/v1/counters/s").statusCode()).isEqualTo(404);
    }
  }

  /** {@code n} sequential GET /ping over one keep-alive connection; the milliseconds of each. */
  private static long[] probePing(InetSocketAddress at, int n) throws IOException {
    long[] millis = new long[n];
    byte[] req = "GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    try (Socket s = new Socket(at.getAddress(), at.getPort())) {
      s.setTcpNoDelay(true);
      s.setSoTimeout(10_000);
      OutputStream out = s.getOutputStream();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[4096];
      for (int i = 0; i < n; i++) {
        long t0 = System.nanoTime();
        out.write(req);
        out.flush();
        StringBuilder got = new StringBuilder();
        while (got.indexOf("{\"pong\":true}") < 0) {
          int r = in.read(buf);
          assertThat(r).as("ping answered").isPositive();
          got.append(new String(buf, 0, r, StandardCharsets.US_ASCII));
        }
        assertThat(got.toString()).startsWith("HTTP/1.1 200 ");
        millis[i] = (System.nanoTime() - t0) / 1_000_000;
      }
    }
    return millis;
  }

  @Test
  void aBadChunkSizeIsAnswered400AtOnce() throws Exception {
    try (ServerProcess server = ServerProcess.start("--store", "mem:")) {
      String answer = rawExchange(server, Kind.BAD_CHUNK_SIZE.bytes);
      assertThat(answer).startsWith("HTTP/1.1 400 ").contains("malformed HTTP request");
    }
  }

  @Test
  void oversizedHeadersAndBodiesAreRefusedWithTheirOwnStatus() throws Exception {
    try (ServerProcess server = ServerProcess.start("--store", "mem:", "--max-body", "100")) {
      String big = "x".repeat(TallyServer.MAX_HEADER_BYTES + 10);
      assertThat(rawExchange(server, ("GET /ping HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + big
          + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII))).startsWith("HTTP/1.1 431 ");
      assertThat(rawExchange(server, ("POST /v1/counters/b/incr HTTP/1.1\r\nHost: 127.0.0.1\r\n"
          + "Content-Type: application/json\r\nContent-Length: 101\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII))).startsWith("HTTP/1.1 413 ");
      assertThat(rawExchange(server, ("GET /" + "a".repeat(TallyServer.MAX_LINE_BYTES)
          + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").getBytes(StandardCharsets.US_ASCII)))
          .startsWith("HTTP/1.1 414 ");
      assertThat(server.get("/v1/counters/b").statusCode()).isEqualTo(404);
    }
  }

  /** Sends {@code bytes}, returns all the server says until it closes the connection. */
  static String rawExchange(ServerProcess server, byte[] bytes) throws IOException {
    try (Socket s = new Socket("127.0.0.1", server.uri.getPort())) {
      s.setSoTimeout(15_000);
      s.getOutputStream().write(bytes);
      s.getOutputStream().flush();
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.US_ASCII);
    }
  }
}
