package dev.tally.server.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.LimitSpec;
import dev.tally.Tally;
import dev.tally.server.async.Stages;
import dev.tally.server.app.TallyApp.LimiterAction;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The application core answers in records, and refuses with the problem both front ends give. */
class TallyAppTest {
  Tally tally;
  TallyApp app;

  @BeforeEach
  void open() {
    tally = Tally.open("mem:");
    app = new TallyApp(tally, null, null, null);
  }

  @AfterEach
  void close() {
    app.close();
    tally.close();
  }

  private static <T> T done(CompletionStage<T> stage) {
    return stage.toCompletableFuture().join();
  }

  private static Problem problemOf(CompletionStage<?> stage) {
    try {
      stage.toCompletableFuture().join();
    } catch (CompletionException e) {
      return Problem.of(Stages.unwrap(e));
    }
    throw new AssertionError("the stage succeeded");
  }

  @Test
  void countersAnswerInTheirOwnKind() {
    assertThat(done(app.incr("i", 5L, 0L, false))).isEqualTo(new CounterValue("i", 5L));
    assertThat(done(app.incr("f", 0.5, 0L, false))).isEqualTo(new CounterValue("f", 0.5));
    assertThat(done(app.get("f"))).isEqualTo(new CounterValue("f", 0.5));
    assertThat(done(app.pop("i"))).isEqualTo(new CounterValue("i", 5L));
    assertThat(problemOf(app.get("i"))).isEqualTo(Problem.NOT_FOUND);
    assertThat(done(app.incr("f", 1L, 0L, false))).as("an integer delta, as INCRBYFLOAT takes it")
        .isEqualTo(new CounterValue("f", 1.5));
    assertThat(done(app.decr("f", 2L, 0L, false))).isEqualTo(new CounterValue("f", -0.5));
    assertThat(problemOf(app.incr("f", 1L, 0L, true))).isEqualTo(Problem.CONFLICT);
  }

  @Test
  void ttlTellsPermanentFromMissingAndExpiring() {
    done(app.put("p", 1L, null));
    done(app.put("e", 1L, Duration.ofHours(1)));
    assertThat(done(app.ttl("p"))).isEqualTo(new CounterTtl("p", null));
    CounterTtl e = done(app.ttl("e"));
    assertThat(e.ttl()).isPositive().isLessThanOrEqualTo(Duration.ofHours(1));
    assertThat(e.text()).isEqualTo("1h");
    assertThat(problemOf(app.ttl("missing"))).isEqualTo(Problem.NOT_FOUND);
  }

  @Test
  void aTransactionAnswersEachOperationInOrder() {
    TxResult r = done(app.transaction(List.of(
        new TxOp("incr", "a", 2L, 0L, null, null, false),
        new TxOp("get", "b", 1L, 0L, null, null, false),
        new TxOp("delete", "a", 1L, 0L, null, null, false))));
    assertThat(r.results()).containsExactly(new TxResult.Item("a", 2L, null),
        new TxResult.Item("b", null, null), new TxResult.Item("a", null, true));
    assertThat(problemOf(app.transaction(List.of()))).isEqualTo(Problem.BAD_REQUEST);
  }

  @Test
  void aDenialIsADecisionNotAFailure() {
    List<LimitSpec> one = List.of(LimitSpec.parse(LimitSpec.Kind.TOKEN_BUCKET, "1/1h", "default"));
    assertThat(done(app.limiter(LimiterAction.TRY, "l", one, 1)).decision().allowed()).isTrue();
    LimiterDecision denied = done(app.limiter(LimiterAction.TRY, "l", one, 1));
    assertThat(denied.decision().allowed()).isFalse();
    assertThat(denied.never()).isFalse();
    assertThat(done(app.limiter(LimiterAction.TRY, "l", one, 2)).never()).isTrue();
    assertThat(problemOf(app.limiter(LimiterAction.TRY, "l", one, -1)))
        .isEqualTo(Problem.BAD_REQUEST);
  }

  @Test
  void aBucketTakesAWarmUpAfterItsRateAndAWindowRefusesOne() {
    LimitSpec warm = LimitSpec.parse(LimitSpec.Kind.TOKEN_BUCKET, "10/1s warm-up 1m", "default");
    assertThat(warm.limit().warmUpNanos()).isEqualTo(60_000_000_000L);
    assertThat(warm.limit().coldFactor()).isEqualTo(3);
    assertThat(LimitSpec.parse(LimitSpec.Kind.GCRA, "9:10/1s warm-up 30s from 1/5", "default").limit().coldFactor())
        .isEqualTo(5);
    List<LimitSpec> one = List.of(warm);
    int granted = 0;
    while (done(app.limiter(LimiterAction.TRY, "warm", one, 1)).decision().allowed()) {
      granted++;
    }
    assertThat(granted).isEqualTo(4); // cold: 1 + 9/3 of a burst of 10
    assertThatThrownBy(() -> LimitSpec.parse(LimitSpec.Kind.FIXED_WINDOW, "10/1s warm-up 1m", "default"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no rate to warm up");
    assertThatThrownBy(() -> LimitSpec.parse(LimitSpec.Kind.TOKEN_BUCKET, "10/1s warm-up 1m from 1/1", "default"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cold factor");
  }

  @Test
  void namedLimitsWithoutRulesAreNotFound() {
    assertThatThrownBy(() -> app.rules()).isInstanceOf(RequestException.class)
        .hasMessageContaining("--rules");
    assertThat(problemOf(app.rateLimit("d", List.of(), 1))).isEqualTo(Problem.NOT_FOUND);
  }
}
