package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Decision;
import dev.tally.JointDecision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import java.time.Duration;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

/**
 * One decision across several limiters ({@link Tally#decide}): all granted and all consumed, or
 * none taken. A store that cannot decide several keys atomically must say so with an
 * {@link UnsupportedOperationException}; the cases then skip, printing why.
 *
 * <p>Every name of a test carries one hash tag, so that on Redis Cluster the keys of a decision
 * share a slot, as the documentation tells users to tag theirs.
 *
 * <p>Tagged {@code joint-limiters}, so that a store module can run this suite alone across its
 * configurations: {@code mvn test -Dtest=RedisConformanceTest -Dgroups=joint-limiters}.
 */
@Tag("joint-limiters")
public abstract class JointLimiterContract extends TallyFixture {
  private static final Duration LONG = Duration.ofHours(2);

  /** The names' shared hash tag, unique to the test. */
  private String tag;

  /** Threads of the contention case. */
  protected int threads() {
    return 8;
  }

  /** Decisions per thread in the contention case. */
  protected int decisionsPerThread() {
    StoreConfiguration c = configuration();
    return c == null ? 200 : Math.max(25, c.operationsPerThread() / 10);
  }

  @BeforeEach
  void skipWhereUnsupported() {
    tag = "{tck-" + UUID.randomUUID().toString().substring(0, 8) + "}";
    try {
      tally.decide(List.of(tally.limiter(name("probe"), Limit.tokenBucket(1, LONG))), 0);
    } catch (UnsupportedOperationException e) {
      String reason = "skipped joint limiter decisions: " + e.getMessage();
      System.out.println("[skip] " + reason);
      Assumptions.abort(reason);
    }
  }

  /** A limiter name of this test. */
  protected String name(String local) {
    return tag + ":" + local;
  }

  @Test
  public void grantedTakesFromEveryLimiter() {
    RateLimiter user = tally.limiter(name("user"), Limit.tokenBucket(3, LONG));
    RateLimiter tenant = tally.limiter(name("tenant"), Limit.tokenBucket(5, LONG));
    RateLimiter global = tally.limiter(name("global"), Limit.tokenBucket(10, LONG));
    JointDecision d = tally.decide(List.of(user, tenant, global), 2);
    assertThat(d.allowed()).isTrue();
    assertThat(d.refusedIndex()).isEqualTo(-1);
    assertThat(d.refusedBy()).isNull();
    assertThat(d.names()).containsExactly(user.name(), tenant.name(), global.name());
    assertThat(d.decisions()).extracting(Decision::remaining).containsExactly(1L, 3L, 8L);
    assertThat(d.remaining()).isEqualTo(1);
    assertThat(List.of(user.available(), tenant.available(), global.available())).containsExactly(1L, 3L, 8L);
  }

  @Test
  public void aRefusalTakesNothingAndNamesTheLimiterThatRefused() {
    RateLimiter user = tally.limiter(name("user"), Limit.tokenBucket(5, LONG));
    RateLimiter tenant = tally.limiter(name("tenant"), Limit.tokenBucket(3, LONG));
    RateLimiter global = tally.limiter(name("global"), Limit.tokenBucket(10, LONG));
    assertThat(tenant.tryAcquire(2)).isTrue();
    JointDecision d = tally.decide(List.of(user, tenant, global), 2);
    assertThat(d.allowed()).isFalse();
    assertThat(d.refusedIndex()).isEqualTo(1);
    assertThat(d.refusedBy()).isEqualTo(tenant.name());
    assertThat(d.refusingLimitIndex()).isZero();
    assertThat(d.decision(1).allowed()).isFalse();
    assertThat(d.decision(1).remaining()).isEqualTo(1);
    assertThat(d.retryAfterNanos()).isPositive().isEqualTo(d.decision(1).retryAfterNanos());
    // The others would have granted, and report their state as it is: nothing taken.
    assertThat(d.decision(0).allowed()).isTrue();
    assertThat(d.decision(0).remaining()).isEqualTo(5);
    assertThat(d.decision(2).remaining()).isEqualTo(10);
    assertThat(List.of(user.available(), tenant.available(), global.available())).containsExactly(5L, 1L, 10L);
    // One permit fits every limiter.
    assertThat(tally.decide(List.of(user, tenant, global), 1).allowed()).isTrue();
    assertThat(List.of(user.available(), tenant.available(), global.available())).containsExactly(4L, 0L, 9L);
  }

  @Test
  public void theLimitThatRefusedIsReported() {
    RateLimiter user = tally.limiter(name("user"),
        Limit.tokenBucket(100, LONG), Limit.fixedWindow(2, Duration.ofMinutes(1)));
    RateLimiter global = tally.limiter(name("global"), Limit.tokenBucket(100, LONG));
    assertThat(tally.decide(List.of(global, user), 2).allowed()).isTrue();
    JointDecision d = tally.decide(List.of(global, user), 1);
    assertThat(d.allowed()).isFalse();
    assertThat(d.refusedBy()).isEqualTo(user.name());
    assertThat(d.refusingLimitIndex()).isEqualTo(1);
    assertThat(d.decision(1).limits().get(0).remaining()).isEqualTo(98);
    assertThat(global.available()).isEqualTo(98);
  }

  @Test
  public void everyAlgorithmTakesPartAndTheScarcestDecides() {
    List<RateLimiter> ls = List.of(
        tally.limiter(name("token"), Limit.tokenBucket(9, LONG)),
        tally.limiter(name("leaky"), Limit.leakyBucket(8, LONG)),
        tally.limiter(name("gcra"), Limit.gcra(6, 7, LONG)),
        tally.limiter(name("fixed"), Limit.fixedWindow(6, LONG)),
        tally.limiter(name("sliding"), Limit.slidingWindow(5, LONG)),
        tally.limiter(name("quota"), Limit.quota(10, Limit.Period.MONTH, ZoneOffset.UTC)));
    int granted = 0;
    JointDecision d = tally.decide(ls, 1);
    while (d.allowed()) {
      granted++;
      assertThat(granted).as("grants").isLessThanOrEqualTo(5);
      d = tally.decide(ls, 1);
    }
    assertThat(granted).isEqualTo(5);
    assertThat(d.refusedBy()).isEqualTo(ls.get(4).name());
    assertThat(ls).extracting(RateLimiter::available).containsExactly(4L, 3L, 2L, 1L, 0L, 5L);
  }

  @Test
  public void zeroPermitsReportEveryStateAndTakeNothing() {
    RateLimiter a = tally.limiter(name("a"), Limit.tokenBucket(4, LONG));
    RateLimiter b = tally.limiter(name("b"), Limit.fixedWindow(2, LONG));
    assertThat(b.tryAcquire(2)).isTrue();
    JointDecision d = tally.decide(List.of(a, b), 0);
    assertThat(d.allowed()).isTrue();
    assertThat(d.decisions()).extracting(Decision::remaining).containsExactly(4L, 0L);
    assertThat(a.available()).isEqualTo(4);
  }

  @Test
  public void theAsynchronousFormHasTheSameSemantics() throws Exception {
    RateLimiter user = tally.limiter(name("user"), Limit.tokenBucket(2, LONG));
    RateLimiter global = tally.limiter(name("global"), Limit.slidingWindow(10, LONG));
    JointDecision first = tally.decideAsync(List.of(user, global), 2).toCompletableFuture().get(30, TimeUnit.SECONDS);
    assertThat(first.allowed()).isTrue();
    JointDecision second = tally.decideAsync(List.of(user, global), 1).toCompletableFuture().get(30, TimeUnit.SECONDS);
    assertThat(second.allowed()).isFalse();
    assertThat(second.refusedBy()).isEqualTo(user.name());
    assertThat(global.available()).isEqualTo(8);
  }

  @Test
  public void badInputIsRefusedWithAClearMessage() {
    RateLimiter a = tally.limiter(name("a"), Limit.tokenBucket(4, LONG));
    assertThatThrownBy(() -> tally.decide(List.of(), 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one");
    assertThatThrownBy(() -> tally.decide(List.of(a, tally.limiter(name("a"), Limit.fixedWindow(1, LONG))), 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("twice");
    assertThatThrownBy(() -> tally.decide(List.of(a), -1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("permits");
    assertThatThrownBy(() -> tally.decide(List.of(a, a.withOperationId("op-1")), 1))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("operation id");
    try (Tally other = open(clock)) {
      RateLimiter foreign = other.limiter(name("b"), Limit.tokenBucket(4, LONG));
      assertThatThrownBy(() -> tally.decide(List.of(a, foreign), 1))
          .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("another Tally");
    }
    assertThat(a.available()).isEqualTo(4);
  }

  /**
   * Threads decide on overlapping sets (each a user, that user's tenant, and the one global
   * limiter), each limiter of another algorithm. Afterwards, read from the store, every limiter
   * has lost exactly the permits of the decisions that granted, and none is over its limit: a
   * decision refused by one limiter took nothing from the others.
   */
  @Test
  public void concurrentDecisionsOnOverlappingKeysTakeAllOrNothing() {
    int users = 4;
    List<RateLimiter> user = new ArrayList<>();
    for (int u = 0; u < users; u++) {
      user.add(tally.limiter(name("user:" + u), Limit.tokenBucket(30, LONG)));
    }
    List<RateLimiter> tenant = List.of(
        tally.limiter(name("tenant:0"), Limit.fixedWindow(45, LONG)),
        tally.limiter(name("tenant:1"), Limit.quota(40, Limit.Period.MONTH, ZoneOffset.UTC)));
    RateLimiter global = tally.limiter(name("global"), Limit.slidingWindow(70, LONG));
    AtomicLongArray takenByUser = new AtomicLongArray(users);
    AtomicLongArray takenByTenant = new AtomicLongArray(2);
    AtomicLongArray grantsAndRefusals = new AtomicLongArray(2);
    Concurrently.run(threads(), decisionsPerThread(), (t, i) -> {
      int u = (t + i) % users;
      int tn = u % 2;
      long permits = 1L + i % 3;
      // Each thread lists the limiters in its own order: the store must not deadlock on it.
      List<RateLimiter> set = t % 2 == 0
          ? List.of(user.get(u), tenant.get(tn), global)
          : List.of(global, tenant.get(tn), user.get(u));
      JointDecision d = tally.decide(set, permits);
      if (d.allowed()) {
        takenByUser.addAndGet(u, permits);
        takenByTenant.addAndGet(tn, permits);
        grantsAndRefusals.incrementAndGet(0);
      } else {
        grantsAndRefusals.incrementAndGet(1);
      }
    });
    long total = 0;
    for (int u = 0; u < users; u++) {
      assertThat(30 - user.get(u).available()).as("taken from user %d", u).isEqualTo(takenByUser.get(u));
      total += takenByUser.get(u);
    }
    assertThat(45 - tenant.get(0).available()).as("taken from tenant 0").isEqualTo(takenByTenant.get(0));
    assertThat(40 - tenant.get(1).available()).as("taken from tenant 1").isEqualTo(takenByTenant.get(1));
    assertThat(70 - global.available()).as("taken from global").isEqualTo(total);
    assertThat(total).as("the global limit is reached, and never passed").isBetween(68L, 70L);
    assertThat(grantsAndRefusals.get(1)).as("refusals").isPositive();
  }
}
