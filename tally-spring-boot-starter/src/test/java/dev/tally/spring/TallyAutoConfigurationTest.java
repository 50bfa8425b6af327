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
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
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
  @ExtendWith(OutputCaptureExtension.class)
  void aNewerVersionOfARuleReachesExistingKeysKeepingWhatWasConsumed(@TempDir Path dir, CapturedOutput output) {
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
                assertThat(output.toString().split("were replaced by this process", -1)).as("one log line").hasSize(2);
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
          .hasMessageContaining("tally.limits.api").hasMessageContaining("token-bucket 100/1m");
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

  @Test
  void anAnnotationNamingAMissingRuleStopsStartup() {
    runner.withUserConfiguration(BadAnnotation.class).run(context -> {
      assertThat(context).hasFailed();
      assertThat(context.getStartupFailure()).rootCause()
          .hasMessageContaining("@RateLimited on").hasMessageContaining("no rate-limit rule 'missing'");
    });
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
}
