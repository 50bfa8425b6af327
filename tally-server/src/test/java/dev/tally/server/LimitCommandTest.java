package dev.tally.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.server.InProcess.Run;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally limit reconfigure} and {@code top-up}, the limiter routes the command line lacked,
 * and how a command hears that stored limits decided. The limits refill slowly (per hour, per
 * month), so what is left does not move between two commands.
 */
class LimitCommandTest {
  @TempDir
  Path dir;
  InProcess tally;

  @BeforeEach
  void store() {
    tally = new InProcess(dir);
  }

  private static String decision(Run r) {
    return r.out().replaceAll(" reset-after=\\S+| retry-after=\\S+", "");
  }

  @Test
  void reconfigureStoresNewLimitsKeepingWhatWasConsumed() {
    assertThat(decision(tally.run("limit", "try", "api", "--token-bucket", "10/1h", "--permits", "4")))
        .isEqualTo("allowed remaining=6 limit=10\n");
    Run r = tally.run("limit", "reconfigure", "api", "--token-bucket", "20/1h");
    assertThat(r.exit()).isZero();
    assertThat(decision(r)).isEqualTo("allowed remaining=16 limit=20\n");
    assertThat(r.err()).isEmpty();
    // the stored limits decide now, and a command giving the old ones hears it
    Run stale = tally.run("limit", "try", "api", "--token-bucket", "10/1h");
    assertThat(decision(stale)).isEqualTo("allowed remaining=15 limit=20\n");
    assertThat(stale.err()).isEqualTo("tally: note: limiter 'api' has stored limits that decided,"
        + " not the ones given; 'tally limit reconfigure' changes them\n");
    Run json = tally.run("--json", "limit", "peek", "api", "--token-bucket", "20/1h");
    assertThat(json.out()).contains("\"remaining\":15").doesNotContain("storedLimits");
  }

  @Test
  void decideTakesFromEveryLimiterOrFromNone() {
    Run granted = tally.run("decide", "--limiter", "user:1", "--token-bucket", "10/1h",
        "--limiter", "tenant:1", "--fixed-window", "3/1h", "--permits", "2");
    assertThat(granted.exit()).isZero();
    assertThat(decision(granted)).isEqualTo("allowed\nuser:1 allowed remaining=8 limit=10\n"
        + "tenant:1 allowed remaining=1 limit=3\n");
    Run refused = tally.run("decide", "--limiter", "user:1", "--token-bucket", "10/1h",
        "--limiter", "tenant:1", "--fixed-window", "3/1h", "--permits", "2");
    assertThat(refused.exit()).isEqualTo(1);
    assertThat(decision(refused)).isEqualTo("denied refused-by=tenant:1\nuser:1 allowed remaining=8 limit=10\n"
        + "tenant:1 denied remaining=1 limit=3\n");
    assertThat(decision(tally.run("limit", "peek", "user:1", "--token-bucket", "10/1h")))
        .as("the refused decision took nothing").isEqualTo("allowed remaining=8 limit=10\n");
    Run json = tally.run("--json", "decide", "--limiter", "user:1", "--token-bucket", "10/1h",
        "--limiter", "tenant:1", "--fixed-window", "3/1h", "--permits", "2");
    assertThat(json.exit()).isEqualTo(1);
    assertThat(json.out()).contains("\"allowed\":false", "\"refusedBy\":\"tenant:1\"", "\"limiters\":[");
  }

  @Test
  void decideNeedsALimitForEachLimiterAndNoOperationId() {
    Run noLimit = tally.run("decide", "--limiter", "a", "--token-bucket", "1/1h", "--limiter", "b");
    assertThat(noLimit.exit()).isEqualTo(2);
    assertThat(noLimit.err()).isEqualTo("tally: --limiter b: give a limit, e.g. --token-bucket 100/1m\n");
    Run opId = tally.run("--op-id", "x1", "decide", "--limiter", "a", "--token-bucket", "1/1h");
    assertThat(opId.exit()).isEqualTo(2);
    assertThat(opId.err()).contains("a joint decision takes no operation id");
    assertThat(tally.run("decide", "--help").exit()).isZero();
  }

  @Test
  void aReservationSettlesAtTheRealCostOnceAndIsThenGone() {
    Run reserved = tally.run("--op-id", "call-1", "limit", "reserve", "llm", "--token-bucket", "1000/1h",
        "--estimate", "300", "--ttl", "5m");
    assertThat(reserved.exit()).isZero();
    assertThat(decision(reserved)).isEqualTo("allowed remaining=700 limit=1000 reservation=call-1\n");
    Run refused = tally.run("limit", "reserve", "llm", "--token-bucket", "1000/1h", "--estimate", "800",
        "--ttl", "5m");
    assertThat(refused.exit()).isEqualTo(1);
    assertThat(decision(refused)).isEqualTo("denied remaining=700 limit=1000\n");

    Run settled = tally.run("limit", "settle", "llm", "--token-bucket", "1000/1h", "--id", "call-1",
        "--actual", "1200");
    assertThat(settled.exit()).isZero();
    assertThat(decision(settled)).isEqualTo("allowed remaining=0 limit=1000 reservation=call-1\n");
    Run again = tally.run("limit", "settle", "llm", "--token-bucket", "1000/1h", "--id", "call-1",
        "--actual", "5");
    assertThat(again.exit()).isEqualTo(3);
    assertThat(again.err()).contains("call-1");
    Run cancelled = tally.run("limit", "cancel", "llm", "--token-bucket", "1000/1h", "--id", "call-1");
    assertThat(cancelled.exit()).isEqualTo(3);
    // 1,200 charged, 200 of them below empty: a permit waits for those too
    Run after = tally.run("limit", "try", "llm", "--token-bucket", "1000/1h");
    assertThat(after.exit()).isEqualTo(1);
    assertThat(after.out()).contains("retry-after=12m");
  }

  @Test
  void reconfigureNeedsLimits() {
    Run r = tally.run("limit", "reconfigure", "api");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("tally: give a limit, e.g. --token-bucket 100/1m\n");
  }

  @Test
  void topUpAddsUnitsToThisPeriodOfAQuota() {
    tally.run("limit", "try", "mail", "--quota", "2/day", "--permits", "2");
    assertThat(decision(tally.run("limit", "try", "mail", "--quota", "2/day")))
        .isEqualTo("denied remaining=0 limit=2\n");
    Run r = tally.run("limit", "top-up", "mail", "--quota", "2/day", "--units", "5");
    assertThat(r.exit()).isZero();
    assertThat(decision(r)).isEqualTo("allowed remaining=5 limit=7\n");
    assertThat(r.err()).as("its own answer's larger limit is no news").isEmpty();
    assertThat(decision(tally.run("limit", "try", "mail", "--quota", "2/day")))
        .isEqualTo("allowed remaining=4 limit=7\n");
    assertThat(tally.run("--json", "limit", "top-up", "mail", "--quota", "2/day", "--units", "1").out())
        .contains("\"toppedUp\":1").contains("\"remaining\":5");
  }

  @Test
  void aBadTopUpSaysWhatToGiveAndChangesNothing() {
    tally.run("limit", "try", "mail", "--quota", "10/month", "--permits", "3");
    String[][] bad = {
        {"limit", "top-up", "mail", "--quota", "10/month"},
        {"limit", "top-up", "mail", "--quota", "10/month", "--units", "0"},
        {"limit", "top-up", "mail", "--quota", "10/month", "--units", "-5"},
        {"limit", "top-up", "mail", "--token-bucket", "10/1h", "--units", "5"},
        {"limit", "top-up", "mail", "--quota", "10/month", "--quota", "5/day", "--units", "5"},
        {"limit", "top-up", "mail", "--units", "5"}};
    String[] messages = {
        "tally limit top-up: missing required option: '--units=N' (see 'tally limit top-up --help')\n",
        "tally: top-up units must be positive, not 0\n",
        "tally: top-up units must be positive, not -5\n",
        "tally: top-up needs exactly one quota limit, e.g. --quota 1000/month\n",
        "tally: top-up needs exactly one quota limit, e.g. --quota 1000/month\n",
        "tally: give a limit, e.g. --token-bucket 100/1m\n"};
    for (int i = 0; i < bad.length; i++) {
      Run r = tally.run(bad[i]);
      assertThat(r.exit()).as(String.join(" ", bad[i])).isEqualTo(2);
      assertThat(r.out()).as(String.join(" ", bad[i])).isEmpty();
      assertThat(r.err()).as(String.join(" ", bad[i])).isEqualTo(messages[i]);
    }
    assertThat(decision(tally.run("limit", "peek", "mail", "--quota", "10/month")))
        .isEqualTo("allowed remaining=7 limit=10\n");
  }

  @Test
  void theJsonAnswersAreTheHttpBodies() {
    assertThat(tally.run("--json", "limit", "reconfigure", "api", "--token-bucket", "5/1h").out())
        .isEqualTo("{\"name\":\"api\",\"allowed\":true,\"permits\":0,\"remaining\":5,\"limit\":5,"
            + "\"retryAfterMillis\":0,\"resetAfterMillis\":0}\n");
  }

  /**
   * Two callers with different versions of one limiter's limits: the newer replaces the stored
   * limits of the existing key, keeping what was consumed, and the older then applies them; a
   * note on stderr says which (the --json answer carries limitsMismatch and storedVersion).
   */
  @Test
  void theNewerLimitsVersionWinsOnAnExistingKeyKeepingWhatWasConsumed() {
    assertThat(decision(tally.run("limit", "try", "api", "--token-bucket", "10/1h", "--permits", "4",
        "--limits-version", "1"))).isEqualTo("allowed remaining=6 limit=10\n");
    Run upgraded = tally.run("limit", "try", "api", "--token-bucket", "20/1h", "--limits-version", "2");
    assertThat(decision(upgraded)).isEqualTo("allowed remaining=15 limit=20\n");
    assertThat(upgraded.err()).isEqualTo("tally: note: limiter 'api' had limits of version 1"
        + " stored; these, newer, replaced them, keeping what was consumed\n");
    Run adopted = tally.run("limit", "try", "api", "--token-bucket", "10/1h", "--limits-version", "1");
    assertThat(decision(adopted)).isEqualTo("allowed remaining=14 limit=20\n");
    assertThat(adopted.err()).isEqualTo("tally: note: limiter 'api' has limits of a newer version"
        + " (2) stored; they decided, not the ones given\n");
    Run json = tally.run("--json", "limit", "peek", "api", "--token-bucket", "10/1h");
    assertThat(json.out()).contains("\"remaining\":14", "\"limit\":20",
        "\"limitsMismatch\":\"adopted\"", "\"storedVersion\":2");
    Run same = tally.run("limit", "peek", "api", "--token-bucket", "30/1h", "--limits-version", "2");
    assertThat(same.err()).isEqualTo("tally: note: limiter 'api' has other limits stored under the"
        + " same version (2); they decided, not the ones given: give changed limits a higher"
        + " --limits-version\n");
    Run bad = tally.run("limit", "try", "api", "--token-bucket", "10/1h", "--limits-version", "-1");
    assertThat(bad.exit()).isEqualTo(2);
    assertThat(bad.err()).isEqualTo("tally: --limits-version must be from 0 to 35184372088831"
        + " (2^45 - 1), not -1\n");
  }
}

