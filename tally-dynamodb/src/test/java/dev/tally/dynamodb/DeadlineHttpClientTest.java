package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

import dev.tally.StoreTimeoutException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.retries.StandardRetryStrategy;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * The backstop for the SDK's call timeout: a request the SDK's own timer does not end (as when
 * that timer fires before the request is registered with it) is aborted at its call's deadline.
 * The server is a socket that accepts connections and never answers, as a frozen server does;
 * the SDK's timeouts and the socket's are a minute, so only the backstop can end the call sooner.
 */
class DeadlineHttpClientTest {
  private static final Duration TIMEOUT = Duration.ofMillis(300);
  private static final Duration SLACK = Duration.ofSeconds(1);

  @Test
  void aRequestStillRunningAtItsCallsDeadlineIsAbortedAsATimeout() throws Exception {
    try (ServerSocket silent = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        DynamoDbClient client = DynamoDbClient.builder()
            .httpClient(new DeadlineHttpClient(Apache5HttpClient.builder().socketTimeout(Duration.ofMinutes(1)).build()))
            .endpointOverride(URI.create("http://127.0.0.1:" + silent.getLocalPort()))
            .region(Region.US_EAST_1)
            .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create("test", "test")))
            .overrideConfiguration(c -> c.apiCallTimeout(Duration.ofMinutes(1))
                .retryStrategy(StandardRetryStrategy.builder().maxAttempts(1).build()))
            .build()) {
      Options options = Options.parse("dynamodb://silent?endpoint=http://127.0.0.1:" + silent.getLocalPort()
          + "&key=k&region=us-east-1&timeout=" + TIMEOUT.toMillis());
      Deadline deadline = Deadline.start(options);
      long started = System.nanoTime();
      Deadline previous = deadline.enter();
      Throwable failure;
      try {
        failure = catchThrowable(() -> client.getItem(b -> b.tableName("silent").key(Map.of("k", AttributeValue.fromS("x")))));
      } finally {
        Deadline.release(previous);
      }
      long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);

      assertThat(failure).as("the call against a silent server").isNotNull();
      assertThat(tookMillis).as("how long the call took, in ms")
          .isLessThanOrEqualTo(TIMEOUT.plus(SLACK).toMillis())
          .isGreaterThanOrEqualTo(TIMEOUT.toMillis());
      assertThat(causes(failure, SocketTimeoutException.class)).as("%s caused by a timeout", failure).isTrue();
      assertThat(Errors.translate(failure, "x", options))
          .as("what the caller sees: a timeout, 'may or may not have been applied'")
          .isInstanceOf(StoreTimeoutException.class);
      assertThat(Deadline.current()).as("the thread's deadline after the call").isNull();
    }
  }

  private static boolean causes(Throwable t, Class<? extends Throwable> type) {
    for (Throwable c = t; c != null; c = c.getCause()) {
      if (type.isInstance(c)) {
        return true;
      }
    }
    return false;
  }
}
