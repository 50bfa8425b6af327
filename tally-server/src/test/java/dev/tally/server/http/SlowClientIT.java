package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * Clients that send part of a request and stop cannot stall the server: each such connection is
 * closed once its request has taken longer than the bound to arrive (20 s unless the JVM says
 * otherwise; 2 s here, to keep the test short), and the workers it held answer others again.
 */
class SlowClientIT {
  @Test
  void clientsThatStopMidRequestDoNotStallTheServer() throws IOException, InterruptedException {
    try (ServerProcess server = ServerProcess.start(
        Map.of("JAVA_TOOL_OPTIONS", "-D" + TallyServer.REQUEST_TIME_PROPERTY + "=2"),
        "--store", "mem:", "--threads", "2")) {
      List<Socket> stalled = new ArrayList<>();
      try {
        for (int i = 0; i < 6; i++) { // more than the workers: every one is held
          Socket s = new Socket("127.0.0.1", server.uri.getPort());
          OutputStream out = s.getOutputStream();
          out.write("POST /v1/counters/s/incr HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n1"
              .getBytes(StandardCharsets.US_ASCII));
          out.flush();
          stalled.add(s);
        }
        long started = System.nanoTime();
        assertThat(server.get("/ping").statusCode()).isEqualTo(200);
        assertThat((System.nanoTime() - started) / 1_000_000_000L).as("seconds to answer").isLessThan(15);
        assertThat(server.post("/v1/counters/s/incr", null).statusCode()).isEqualTo(200);
      } finally {
        for (Socket s : stalled) {
          s.close();
        }
      }
    }
  }

  @Test
  void theServerBoundsHowLongARequestMayTakeToArrive() throws ClassNotFoundException {
    Class.forName(TallyServer.class.getName(), true, getClass().getClassLoader());
    assertThat(Integer.getInteger(TallyServer.REQUEST_TIME_PROPERTY)).isEqualTo(20);
  }
}
