package dev.tally.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.Tally;
import dev.tally.TimeSource;
import dev.tally.tck.ManualTimeSource;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.time.Instant;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The auto-configuration in plain (non-web) contexts: what it creates, what it leaves to the
 * application, and how a bad setting stops the application at startup with a message that
 * names it.
 */
class TallyAutoConfigurationTest {
  private final ApplicationContextRunner runner = new ApplicationContextRunner()
      .withConfiguration(AutoConfigurations.of(TallyAutoConfiguration.class))
      .withPropertyValues("tally.store=mem:");

  @Test
  void opensOneStoreAndItsCountersAndClosesItWithTheContext(@TempDir Path dir) {
    AtomicReference<Tally> opened = new AtomicReference<>();
    runner.withPropertyValues("tally.store=file:" + dir.resolve("data")).run(context -> {
      assertThat(context).hasSingleBean(Tally.class).hasSingleBean(Counters.class)
          .hasSingleBean(TallyRateLimits.class);
      Tally tally = context.getBean(Tally.class);
      opened.set(tally);
      assertThat(tally.uri()).isEqualTo("file:" + dir.resolve("data"));
      assertThat(context.getBean(Counters.class).incr("views")).isEqualTo(1);
      assertThat(tally.counters().get("views")).hasValue(1);
    });
    // Closed with the context: the file store refuses further operations.
    assertThatThrownBy(() -> opened.get().counters().incr("views")).isInstanceOf(RuntimeException.class);
  }

  @Test
  void storeOptionsBecomeQueryParameters(@TempDir Path dir) {
    runner.withPropertyValues("tally.store=file:" + dir.resolve("data"), "tally.store-options.sync=always")
        .run(context -> {
          assertThat(context).hasNotFailed();
          assertThat(context.getBean(Tally.class).uri()).isEqualTo("file:" + dir.resolve("data") + "?sync=always");
          context.getBean(Counters.class).incr("k");
        });
    assertThat(Files.exists(dir.resolve("data"))).isTrue();
  }

  @Test
  void theApplicationsOwnStoreWins() {
    runner.withUserConfiguration(OwnTally.class).run(context -> {
      assertThat(context).hasSingleBean(Tally.class);
      assertThat(context.getBean(Tally.class).uri()).isEqualTo("null:");
      assertThat(context.getBean(Counters.class).incr("k", 5)).isEqualTo(5);
      assertThat(context.getBean(Counters.class).incr("k", 5)).isEqualTo(5);
    });
  }

  @Test
  void namedRulesAreInjectableAndShareStateWithTheirLimiters() {
    runner.withPropertyValues("tally.limits.api.limit=token-bucket 2/1d").run(context -> {
      TallyRateLimits limits = context.getBean(TallyRateLimits.class);
      assertThat(limits.ruleNames()).containsExactly("api");
      assertThat(limits.check("api", "u").allowed()).isTrue();
      assertThat(limits.limiter("api", "u").available()).isEqualTo(1);
      assertThat(limits.limiter("api", "u").tryAcquire()).isTrue();
      RateLimitVerdict denied = limits.check("api", "u");
      assertThat(denied.allowed()).isFalse();
      assertThat(denied.rateLimitField()).matches("\"api\";r=0;t=\\d+");
      assertThatThrownBy(() -> limits.enforce("api", "u", 1)).isInstanceOf(RateLimitExceededException.class);
      assertThatThrownBy(() -> limits.check("nope", "u"))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no rate-limit rule 'nope'");
    });
  }

  /**
   * Two instances on one store, holding versions 1 and 2 of a rule: the newer moves the existing
   * key to its limits keeping what was consumed, counted once; the older then applies them.
   */
  @Test
  void aNewerVersionOfARuleReachesExistingKeysKeepingWhatWasConsumed(@TempDir Path dir) {
    // Records of the library's own logger, read directly: java.util.logging's console handler keeps
    // the System.err of whichever test logged first, so captured output would miss them.
    java.util.logging.Logger limitsLog = java.util.logging.Logger.getLogger("dev.tally.limits");
    List<String> lines = new java.util.concurrent.CopyOnWriteArrayList<>();
    java.util.logging.Handler handler = new java.util.logging.Handler() {
      @Override
      public void publish(java.util.logging.LogRecord r) {
        lines.add(new java.util.logging.SimpleFormatter().formatMessage(r));
      }

      @Override
      public void flush() {}

      @Override
      public void close() {}
    };
    limitsLog.addHandler(handler);
    try {
      newerVersionWins(dir, lines);
    } finally {
      limitsLog.removeHandler(handler);
    }
  }

  private void newerVersionWins(Path dir, List<String> lines) {
    String store = "tally.store=file:" + dir.resolve("data");
    SimpleMeterRegistry oldMeters = new SimpleMeterRegistry();
    SimpleMeterRegistry newMeters = new SimpleMeterRegistry();
    runner.withBean(MeterRegistry.class, () -> oldMeters)
        .withPropertyValues(store, "tally.limits.api.limit=fixed-window 2/1h", "tally.limits.api.version=1")
        .run(old -> {
          TallyRateLimits v1 = old.getBean(TallyRateLimits.class);
          assertThat(v1.check("api", "u").allowed()).isTrue();
          runner.withBean(MeterRegistry.class, () -> newMeters)
              .withPropertyValues(store, "tally.limits.api.limit=fixed-window 5/1h", "tally.limits.api.version=2")
              .run(next -> {
                TallyRateLimits v2 = next.getBean(TallyRateLimits.class);
                assertThat(v2.check("api", "u").allowed()).isTrue();
                assertThat(v2.limiter("api", "u").available()).as("5, less the two taken").isEqualTo(3);
                assertThat(newMeters.get("tally.limiter.version.mismatch").tag("outcome", "upgraded").counter()
                    .count()).isEqualTo(1);
                assertThat(v2.check("api", "u").allowed()).isTrue();
                assertThat(newMeters.get("tally.limiter.version.mismatch").tag("outcome", "upgraded").counter()
                    .count()).as("once: the key is version 2's now").isEqualTo(1);
                assertThat(lines).filteredOn(l -> l.contains("were replaced by this process")).as("one log line")
                    .hasSize(1);
                assertThat(v1.limiter("api", "u").available()).as("the older instance applies them").isEqualTo(2);
                assertThat(oldMeters.get("tally.limiter.version.mismatch").tag("outcome", "adopted").counter()
                    .count()).isEqualTo(1);
              });
        });
  }

  @Test
  void aRuleVersionOutOfRangeStopsStartup() {
    runner.withPropertyValues("tally.limits.api.limit=token-bucket 2/1m", "tally.limits.api.version=-1")
        .run(context -> assertThat(context).hasFailed().getFailure().rootCause().hasMessageContaining("version -1"));
  }

  @Test
  void retryAfterIsWhenTheRequestFitsOnTheApplicationsClock() {
    ManualTimeSource clock = new ManualTimeSource(Instant.parse("2026-03-01T10:00:00Z"));
    runner.withBean(TimeSource.class, () -> clock)
        .withPropertyValues("tally.limits.api.limit=token-bucket 2/1m").run(context -> {
          TallyRateLimits limits = context.getBean(TallyRateLimits.class);
          assertThat(limits.check("api", "u").allowed()).isTrue();
          assertThat(limits.check("api", "u").allowed()).isTrue();
          RateLimitVerdict denied = limits.check("api", "u");
          assertThat(denied.allowed()).isFalse();
          assertThat(denied.retryAfterSeconds()).hasValue(30);
          assertThat(denied.rateLimitField()).isEqualTo("\"api\";r=0;t=60");
          clock.advance(Duration.ofSeconds(29));
          assertThat(limits.check("api", "u").allowed()).isFalse();
          clock.advance(Duration.ofSeconds(1));
          RateLimitVerdict again = limits.check("api", "u");
          assertThat(again.allowed()).isTrue();
          assertThat(again.rateLimitField()).isEqualTo("\"api\";r=0;t=60");
        });
  }

  @Test
  void aLimitThatDoesNotParseStopsStartupNamingTheProperty() {
    runner.withPropertyValues("tally.limits.api.limit=token-bucket 100 per minute").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .hasMessageContaining("tally.limits.api").hasMessageContaining("expected a token bucket like 100/1m");
    });
  }

  @Test
  void aRuleWithoutALimitStopsStartup() {
    runner.withPropertyValues("tally.limits.api.failure-policy=fail-closed").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("rule 'api' has no limit");
    });
  }

  @Test
  void anUnknownStoreStopsStartupSayingWhichModuleToAdd() {
    runner.withPropertyValues("tally.store=dynamodb://t?region=eu-west-1").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("tally-dynamodb");
    });
  }

  /** Port 1 on loopback: nothing listens, so connections are refused at once. */
  private static final String NO_REDIS = "redis://127.0.0.1:1";

  @Test
  void anUnknownTallyPropertyStopsStartupNamingIt() {
    runner.withPropertyValues("tally.limits.api.limit=token-bucket 1/1s", "tally.limits.api.skip-condition=true")
        .run(context -> {
          assertThat(context).hasFailed();
          assertThat(context.getStartupFailure()).hasStackTraceContaining("tally.limits.api.skip-condition");
        });
    runner.withPropertyValues("tally.circut-breaker.failures=3").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).hasStackTraceContaining("tally.circut-breaker.failures");
    });
  }

  @Test
  void theJarHoldsConfigurationMetadataForTheMainProperties() throws Exception {
    java.util.List<String> ours = new java.util.ArrayList<>();
    for (java.net.URL url : java.util.Collections.list(getClass().getClassLoader()
        .getResources("META-INF/spring-configuration-metadata.json"))) {
      try (var in = url.openStream()) {
        String json = new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        if (json.contains("\"dev.tally.spring.TallyProperties\"")) {
          ours.add(json);
        }
      }
    }
    assertThat(ours).hasSize(1);
    assertThat(ours.get(0)).contains("\"tally.store\"", "\"tally.store-options\"", "\"tally.failure-policy\"",
        "\"tally.key-prefix\"", "\"tally.filter.rules\"", "\"tally.circuit-breaker.enabled\"",
        "\"tally.circuit-breaker.failures\"", "\"tally.circuit-breaker.cool-down\"",
        "\"tally.fail-on-startup-without-store\"", "\"tally.health.outage-status\"",
        "\"tally.limits\"");
  }

  @Test
  void startsWithoutTheStoreAndTheBreakerIsOnByDefault() {
    runner.withBean(io.micrometer.core.instrument.MeterRegistry.class,
            io.micrometer.core.instrument.simple.SimpleMeterRegistry::new)
        .withPropertyValues("tally.store=" + NO_REDIS, "tally.store-options.timeout=200ms").run(context -> {
      assertThat(context).hasNotFailed();
      Tally tally = context.getBean(Tally.class);
      assertThat(tally.storeOpen()).isFalse();
      for (int i = 0; i < 5; i++) {
        assertThatThrownBy(() -> tally.counters().incr("k")).isInstanceOf(dev.tally.StoreUnavailableException.class);
      }
      assertThat(tally.circuitState()).isEqualTo(dev.tally.CircuitBreaker.State.OPEN);
      io.micrometer.core.instrument.MeterRegistry meters = context.getBean(io.micrometer.core.instrument.MeterRegistry.class);
      assertThat(meters.get("tally.circuit.open").gauge().value()).isEqualTo(1.0);
      assertThat(meters.get("tally.circuit.opened").counter().count()).isEqualTo(1.0);
      org.springframework.boot.health.contributor.Health health =
          context.getBean(TallyHealthIndicator.class).health();
      assertThat(health.getStatus().getCode()).isEqualTo("UNKNOWN");
      assertThat(health.getDetails()).containsEntry("reachable", false).containsEntry("circuit", "OPEN")
          .containsEntry("opened", false).containsEntry("store", "redis");
    });
  }

  @Test
  void failOnStartupWithoutStoreKeepsTheOldBehaviour() {
    runner.withPropertyValues("tally.store=" + NO_REDIS, "tally.store-options.timeout=200ms",
        "tally.fail-on-startup-without-store=true").run(context -> {
          assertThat(context).hasFailed();
          assertThat(context.getStartupFailure()).hasStackTraceContaining("cannot connect to Redis");
        });
  }

  @Test
  void theBreakerFollowsItsProperties() {
    runner.withPropertyValues("tally.store=" + NO_REDIS, "tally.store-options.timeout=200ms",
        "tally.circuit-breaker.enabled=false").run(context -> {
          Tally tally = context.getBean(Tally.class);
          for (int i = 0; i < 8; i++) {
            assertThatThrownBy(() -> tally.counters().incr("k")).isInstanceOf(dev.tally.StoreException.class);
          }
          assertThat(tally.circuitState()).isEqualTo(dev.tally.CircuitBreaker.State.CLOSED);
        });
    runner.withPropertyValues("tally.store=" + NO_REDIS, "tally.store-options.timeout=200ms",
        "tally.circuit-breaker.failures=2", "tally.circuit-breaker.cool-down=1h").run(context -> {
          Tally tally = context.getBean(Tally.class);
          for (int i = 0; i < 2; i++) {
            assertThatThrownBy(() -> tally.counters().incr("k")).isInstanceOf(dev.tally.StoreException.class);
          }
          assertThat(tally.circuitState()).isEqualTo(dev.tally.CircuitBreaker.State.OPEN);
        });
    runner.withPropertyValues("tally.circuit-breaker.failures=0").run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause().hasMessageContaining("tally.circuit-breaker.failures");
    });
  }

  @Test
  void healthIsDownDuringAnOutageOnlyWhenConfiguredOrEveryRuleFailsClosed() {
    runner.withPropertyValues("tally.store=" + NO_REDIS, "tally.store-options.timeout=200ms",
        "tally.health.outage-status=DOWN").run(context ->
            assertThat(context.getBean(TallyHealthIndicator.class).health().getStatus().getCode()).isEqualTo("DOWN"));
    runner.withPropertyValues("tally.store=" + NO_REDIS, "tally.store-options.timeout=200ms",
        "tally.limits.a.limit=token-bucket 1/1s", "tally.limits.a.failure-policy=fail-closed").run(context ->
            assertThat(context.getBean(TallyHealthIndicator.class).health().getStatus().getCode()).isEqualTo("DOWN"));
    runner.withPropertyValues("tally.store=" + NO_REDIS, "tally.store-options.timeout=200ms",
        "tally.limits.a.limit=token-bucket 1/1s", "tally.limits.a.failure-policy=fail-closed",
        "tally.limits.b.limit=token-bucket 1/1s").run(context ->
            assertThat(context.getBean(TallyHealthIndicator.class).health().getStatus().getCode()).isEqualTo("UNKNOWN"));
    runner.run(context ->
        assertThat(context.getBean(TallyHealthIndicator.class).health().getStatus().getCode()).isEqualTo("UP"));
  }

  @Test
  void aFailOpenAnswerCarriesNoQuotaAndAFailClosedOneIsA503() {
    runner.withPropertyValues("tally.store=" + NO_REDIS, "tally.store-options.timeout=200ms",
        "tally.limits.open.limit=token-bucket 2/1m",
        "tally.limits.closed.limit=token-bucket 2/1m", "tally.limits.closed.failure-policy=fail-closed")
        .run(context -> {
          TallyRateLimits limits = context.getBean(TallyRateLimits.class);
          RateLimitVerdict open = limits.check("open", "u");
          assertThat(open.allowed()).isTrue();
          assertThat(open.storeFailed()).isTrue();
          assertThat(open.headers()).isEmpty();
          RateLimitVerdict closed = limits.check("closed", "u");
          assertThat(closed.allowed()).isFalse();
          assertThat(closed.status()).isEqualTo(503);
          assertThat(closed.headers()).containsExactly(java.util.Map.entry("Retry-After", "1"));
          assertThat(closed.problemJson("/x")).isEqualTo("{\"type\":\"about:blank\",\"title\":\"Service Unavailable\","
              + "\"status\":503,\"detail\":\"the rate-limit store is unavailable, and rate limit 'closed' refuses"
              + " requests until it answers (failure-policy fail-closed); retry after 1 s\",\"instance\":\"/x\","
              + "\"rule\":\"closed\"}");
        });
  }

  @Test
  void anAnnotationNamingAMissingRuleStopsStartup() {
    runner.withUserConfiguration(BadAnnotation.class).run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .hasMessageContaining("@RateLimited on").hasMessageContaining("no rate-limit rule 'missing'");
    });
  }

  @Test
  void aConcurrencyLimitWithoutPermitsStopsStartup() {
    runner.withUserConfiguration(BadConcurrencyLimit.class).run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .hasMessageContaining("@ConcurrencyLimited on").hasMessageContaining("maxPermits must be 1 or more, not 0");
    });
  }

  @Test
  void anAnnotationConditionThatDoesNotParseStopsStartup() {
    runner.withUserConfiguration(BadCondition.class).run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).hasStackTraceContaining("@RateLimited on "
          + BadCondition.Service.class.getName() + ".work: skipCondition: expression '#who ==' does not parse");
    });
  }

  @Configuration(proxyBeanMethods = false)
  static class BadCondition {
    @Bean
    Service service() {
      return new Service();
    }

    static class Service {
      @RateLimited(limits = "fixed-window 1/1d", skipCondition = "#who ==")
      public String work(String who) {
        return who;
      }
    }
  }

  @Test
  void anAnnotatedServiceIsLimitedByItsArguments() {
    runner.withUserConfiguration(GoodAnnotation.class).run(context -> {
      GoodAnnotation.Service s = context.getBean(GoodAnnotation.Service.class);
      assertThat(s.work("a")).isEqualTo("a");
      assertThatThrownBy(() -> s.work("a")).isInstanceOf(RateLimitExceededException.class)
          .hasMessageContaining("key 'a'");
      assertThat(s.work("b")).isEqualTo("b");
      assertThat(s.free("a")).isEqualTo("a");
      assertThat(s.free("a")).isEqualTo("a");
    });
  }

  @Configuration(proxyBeanMethods = false)
  static class OwnTally {
    @Bean
    Tally myTally() {
      return Tally.open("null:");
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class BadAnnotation {
    @Bean
    Service service() {
      return new Service();
    }

    static class Service {
      @RateLimited("missing")
      public void work() {}
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class BadConcurrencyLimit {
    @Bean
    Service service() {
      return new Service();
    }

    static class Service {
      @ConcurrencyLimited(name = "exports", maxPermits = 0)
      public void work() {}
    }
  }

  @Configuration(proxyBeanMethods = false)
  static class GoodAnnotation {
    @Bean
    Service service() {
      return new Service();
    }

    static class Service {
      @RateLimited(limits = "fixed-window 1/1d", key = "#p0")
      public String work(String who) {
        return who;
      }

      public String free(String who) {
        return who;
      }
    }
  }

  @Test
  void badConditionsPlansAndPostExecutionSettingsStopStartupNamingTheProperty() {
    org.springframework.boot.test.context.runner.WebApplicationContextRunner web =
        new org.springframework.boot.test.context.runner.WebApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(TallyAutoConfiguration.class))
            .withPropertyValues("tally.store=mem:", "tally.filter.rules[0].limit=token-bucket 1/1s");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[0].execute-predicates[0]=COOKIE=session"),
        "tally.filter.rules[0].execute-predicates[0]: unknown predicate 'COOKIE'");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[0].skip-predicates[0]=HEADER=Accept,[pdf"),
        "tally.filter.rules[0].skip-predicates[0]: the header's value pattern does not compile");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[0].skip-condition=header('a') ==="),
        "tally.filter.rules[0].skip-condition: expression");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[0].charge-on-status=401",
        "tally.filter.rules[0].post-execute-condition=getStatus() == 401"),
        "tally.filter.rules[0]: give either post-execute-condition or charge-on-status");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[0].charge-on-status=42"),
        "tally.filter.rules[0].charge-on-status: 42 is not an HTTP status");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[0].post-execute-cost=header('X-Cost')",
        "tally.filter.rules[0].reservation-ttl=0s"),
        "tally.filter.rules[0].reservation-ttl must be positive");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[0].charge-on-status=401",
        "tally.filter.rules[0].reservation-ttl=2h"),
        "tally.filter.rules[0].reservation-ttl (PT2H) must not exceed the store's operation-id retention (PT1H)");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[0].reservation-ttl=1m"),
        "tally.filter.rules[0].reservation-ttl applies to a rule charged after the response");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[1].plans.free.limit=token-bucket 1/1s"),
        "tally.filter.rules[1].plans needs plan");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[1].plan=header('X-Plan')",
        "tally.filter.rules[1].plans.free.limit=token-bucket 1/1s", "tally.filter.rules[1].default-plan=gold"),
        "tally.filter.rules[1].default-plan: no plan 'gold' (plans: [free])");
    assertStartupFails(web.withPropertyValues("tally.filter.rules[1].plan=header('X-Plan')",
        "tally.filter.rules[1].plans.free.limit=token bucket"),
        "tally.filter.rules[1].plans.free:");
    // One value with commas is one predicate, as bucket4j reads it.
    web.withPropertyValues("tally.filter.rules[0].execute-predicates=PATH=/a/**,/b",
        "tally.filter.rules[0].skip-predicates=HEADER=Accept,.*(pdf|csv).*").run(context ->
        assertThat(context).hasNotFailed());
  }

  private static void assertStartupFails(
      org.springframework.boot.test.context.runner.WebApplicationContextRunner runner, String message) {
    runner.run(context -> {
      assertThat(context).hasFailed();
      Throwable root = context.getStartupFailure();
      StringBuilder messages = new StringBuilder();
      for (Throwable t = root; t != null; t = t.getCause()) {
        messages.append(t.getMessage()).append('\n');
      }
      assertThat(messages.toString()).contains(message);
    });
  }
}
