package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * Which failures the client retries, counted by a fake endpoint. Throttling and connections
 * never made are always retried: nothing was applied. After a 5xx answer or a connection lost
 * once the request went out, the write may have been applied, and a retried increment could count
 * twice: retried by default, as the AWS SDK does, and never with {@code retryLost=false}, where
 * the caller gets "may or may not have been applied" instead.
 */
class RetryTest {
  private static final int RETRIES = 3;

  // The timeout bounds the whole call, every retry and backoff in it: generous, since this test
  // counts attempts, and a busy machine must not cut them short.
  private static Clients clients(int port, boolean retryLost) {
    return new Clients(Options.parse("dynamodb://tally?endpoint=http://127.0.0.1:" + port + "&retries=" + RETRIES
        + "&timeout=10000&retryLost=" + retryLost), List.of());
  }

  private static void increment(Clients c) {
    c.counters.updateItem(b -> b.tableName("tally").key(Map.of("key", AttributeValue.fromS("k")))
        .updateExpression("ADD v :d").expressionAttributeValues(Map.of(":d", AttributeValue.fromN("1"))));
  }

  /** Answers every request with {@code status} and a DynamoDB error of type {@code type}. */
  private static int attemptsAnswered(int status, String type, boolean retryLost) throws IOException {
    AtomicInteger attempts = new AtomicInteger();
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
    server.createContext("/", exchange -> {
      attempts.incrementAndGet();
      exchange.getRequestBody().readAllBytes();
      byte[] body = ("{\"__type\":\"com.amazonaws.dynamodb.v20120810#" + type + "\",\"message\":\"test\"}")
          .getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().add("Content-Type", "application/x-amz-json-1.0");
      exchange.sendResponseHeaders(status, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    try (Clients c = clients(server.getAddress().getPort(), retryLost)) {
      assertThatThrownBy(() -> increment(c)).isInstanceOf(RuntimeException.class);
    } finally {
      server.stop(0);
    }
    return attempts.get();
  }

  @Test
  void aServerErrorIsRetriedUnlessLostAnswersMayNotBe() throws IOException {
    assertThat(attemptsAnswered(500, "InternalServerError", true)).isEqualTo(RETRIES + 1);
    assertThat(attemptsAnswered(500, "InternalServerError", false)).isEqualTo(1);
    assertThat(attemptsAnswered(503, "ServiceUnavailable", false)).isEqualTo(1);
  }

  @Test
  void throttlingIsRetriedBecauseNothingWasApplied() throws IOException {
    assertThat(attemptsAnswered(400, "ProvisionedThroughputExceededException", true)).isEqualTo(RETRIES + 1);
    assertThat(attemptsAnswered(400, "ProvisionedThroughputExceededException", false)).isEqualTo(RETRIES + 1);
  }

  @Test
  void aConnectionLostAfterTheRequestWasSentIsNotRetriedWhenLostAnswersMayNotBe() throws Exception {
    AtomicInteger attempts = new AtomicInteger();
    try (ServerSocket listener = new ServerSocket(0)) {
      Thread server = new Thread(() -> {
        while (true) {
          try (Socket s = listener.accept()) {
            if (s.getInputStream().read(new byte[65536]) > 0) {
              attempts.incrementAndGet(); // read the request, then drop the connection unanswered
            }
          } catch (IOException closed) {
            return;
          }
        }
      });
      server.setDaemon(true);
      server.start();
      try (Clients c = clients(listener.getLocalPort(), false)) {
        assertThatThrownBy(() -> increment(c)).isInstanceOf(RuntimeException.class);
      }
    }
    assertThat(attempts.get()).isEqualTo(1);
  }
}
