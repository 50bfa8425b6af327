package dev.tally.spring.concurrency;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.ObjectMapper;
import dev.tally.Tally;
import dev.tally.spring.ConcurrencyLimitExceededException;
import dev.tally.spring.Http;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

/** {@code @ConcurrencyLimited} on a real port: permits held while calls run, refused beyond them, given back. */
@SpringBootTest(classes = ConcurrencyApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = "tally.store=mem:")
@DirtiesContext
class ConcurrencyAppTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @LocalServerPort
  int port;

  @Autowired
  ConcurrencyApp.Gate gate;

  @Autowired
  ConcurrencyApp.Jobs jobs;

  @Autowired
  Tally tally;

  private long inUse(String name, long max) {
    return tally.concurrency("rl:concurrency:" + name, max).inUse();
  }

  @Test
  void twoCallsRunAtOnceTheThirdIsRefused429AndThePermitsComeBack() throws Exception {
    Http http = new Http(port);
    gate.open = new CountDownLatch(1);
    ExecutorService pool = Executors.newFixedThreadPool(2);
    try {
      List<Future<HttpResponse<String>>> held = new ArrayList<>();
      for (int i = 0; i < 2; i++) {
        held.add(pool.submit(() -> http.post("/exports/acme")));
      }
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
      while (gate.running.get() < 2) {
        assertThat(System.nanoTime()).as("both calls started").isLessThan(deadline);
        Thread.onSpinWait();
      }
      assertThat(inUse("exports:acme", 2)).isEqualTo(2);

      HttpResponse<String> refused = http.post("/exports/acme");
      assertThat(refused.statusCode()).isEqualTo(429);
      assertThat(refused.headers().firstValue("Content-Type")).hasValue("application/problem+json");
      JsonNode body = JSON.readTree(refused.body());
      assertThat(body.get("title").asString()).isEqualTo("Too Many Requests");
      assertThat(body.get("name").asString()).isEqualTo("rl:concurrency:exports:acme");
      assertThat(body.get("maxPermits").asLong()).isEqualTo(2);
      assertThat(body.get("detail").asString()).contains("all 2 permits");
      assertThat(http.post("/failing/other").statusCode()).as("another key has its own permits").isEqualTo(500);

      gate.open.countDown();
      List<Long> tokens = new ArrayList<>();
      for (Future<HttpResponse<String>> f : held) {
        HttpResponse<String> ok = f.get(30, TimeUnit.SECONDS);
        assertThat(ok.statusCode()).isEqualTo(200);
        tokens.add(Long.parseLong(ok.body().substring("token ".length())));
      }
      assertThat(tokens).doesNotHaveDuplicates();
      assertThat(inUse("exports:acme", 2)).as("released when the calls returned").isZero();
      HttpResponse<String> next = http.post("/exports/acme");
      assertThat(Long.parseLong(next.body().substring("token ".length()))).as("a newer fencing token")
          .isGreaterThan(tokens.stream().mapToLong(Long::longValue).max().orElseThrow());
    } finally {
      gate.open.countDown();
      pool.shutdownNow();
    }
  }

  @Test
  void aCallThatThrowsGivesItsPermitBack() {
    Http http = new Http(port);
    for (int i = 0; i < 3; i++) { // more calls than permits: each gave its permit back
      assertThat(http.post("/failing/beta").statusCode()).isEqualTo(500);
    }
    assertThat(inUse("exports:beta", 2)).isZero();
  }

  @Test
  void aCompletionStageHoldsItsPermitUntilItCompletes() {
    CompletableFuture<String> work = new CompletableFuture<>();
    CompletableFuture<String> started = jobs.start(work);
    assertThat(inUse("jobs", 1)).isEqualTo(1);
    assertThatThrownBy(() -> jobs.start(new CompletableFuture<>()))
        .isInstanceOf(ConcurrencyLimitExceededException.class).hasMessageContaining("'rl:concurrency:jobs'");
    work.complete("done");
    assertThat(started).isCompletedWithValue("done");
    assertThat(inUse("jobs", 1)).isZero();
  }

  @Test
  void aLeaseIsRenewedWhileTheCallOutlastsItsTtl() throws Exception {
    CountDownLatch done = new CountDownLatch(1);
    CompletableFuture<Long> token = CompletableFuture.supplyAsync(() -> {
      try {
        return jobs.longWork(done);
      } catch (InterruptedException e) {
        throw new IllegalStateException(e);
      }
    });
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (inUse("long", 1) == 0) {
      assertThat(System.nanoTime()).as("the call took its permit").isLessThan(deadline);
      Thread.onSpinWait();
    }
    // Renewal runs on the wall clock (every half ttl, 150 ms), so this waits on it: four ttls,
    // after which an unrenewed lease would long have expired.
    Thread.sleep(1_200);
    assertThat(inUse("long", 1)).as("still held: renewed").isEqualTo(1);
    assertThat(tally.concurrency("rl:concurrency:long", 1).tryAcquire(java.time.Duration.ofSeconds(1))).isEmpty();
    done.countDown();
    assertThat(token.get(30, TimeUnit.SECONDS)).isPositive();
    assertThat(inUse("long", 1)).isZero();
  }
}
