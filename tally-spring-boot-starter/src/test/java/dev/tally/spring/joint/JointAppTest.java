package dev.tally.spring.joint;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.spring.Http;
import dev.tally.spring.TallyRateLimits;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.annotation.DirtiesContext;

/**
 * tally.joint-decisions on a real port: the tenant's and the user's filter rules of one request are
 * one joint decision, so a request its user refuses never takes, even for an instant, the tenant's
 * units that another user's request needs.
 */
@SpringBootTest(classes = JointApp.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
    properties = {
        "tally.store=mem:",
        "tally.joint-decisions=true",
        "tally.limits.tenant.limit=token-bucket 20/1d",
        "tally.limits.user.limit=token-bucket 20/1d",
        "tally.filter.rules[0].paths=/api/**",
        "tally.filter.rules[0].key=header:X-Tenant",
        "tally.filter.rules[0].rule=tenant",
        "tally.filter.rules[1].paths=/api/**",
        "tally.filter.rules[1].key=header:X-User",
        "tally.filter.rules[1].rule=user"})
@DirtiesContext
class JointAppTest {
  @LocalServerPort
  int port;

  @Autowired
  TallyRateLimits limits;

  HttpResponse<String> orders(Http http, String user) {
    return http.get("/api/orders", "X-Tenant", "acme", "X-User", user);
  }

  @Test
  void aRequestItsUserRefusesTakesNothingFromItsTenant() throws Exception {
    Http http = new Http(port);
    assertThat(limits.limiter("user", "mallory").tryAcquire(20)).isTrue();
    // Mallory's requests, refused by her own limit, run all along: decided in turn, each would take
    // a tenant unit for an instant before giving it back, and Alice would find the tenant short.
    AtomicBoolean done = new AtomicBoolean();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    List<Future<Integer>> mallory = new ArrayList<>();
    try {
      for (int t = 0; t < 4; t++) {
        mallory.add(pool.submit(() -> {
          int refused = 0;
          while (!done.get()) {
            HttpResponse<String> r = orders(http, "mallory");
            assertThat(r.statusCode()).isEqualTo(429);
            refused++;
          }
          return refused;
        }));
      }
      for (int i = 0; i < 20; i++) {
        assertThat(orders(http, "alice").statusCode()).as("alice's request %d", i + 1).isEqualTo(200);
      }
    } finally {
      done.set(true);
      pool.shutdown();
      assertThat(pool.awaitTermination(30, TimeUnit.SECONDS)).isTrue();
    }
    for (Future<Integer> f : mallory) {
      assertThat(f.get()).isPositive();
    }
    assertThat(limits.limiter("tenant", "acme").available()).isZero();
    assertThat(limits.limiter("user", "alice").available()).isZero();
    HttpResponse<String> refused = orders(http, "bob");
    assertThat(refused.statusCode()).isEqualTo(429);
    assertThat(limits.limiter("user", "bob").available()).as("refused by the tenant: bob kept his").isEqualTo(20);
  }
}
