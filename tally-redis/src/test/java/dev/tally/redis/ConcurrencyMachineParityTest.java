package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.spi.ConcurrencyCall;
import dev.tally.spi.ConcurrencyMachine;
import dev.tally.spi.ConcurrencyRecord;
import dev.tally.spi.ConcurrencyResult;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.UUID;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * {@code concurrency.lua} against tally-core's {@link ConcurrencyMachine}: random sequences of
 * acquires (with and without a ticket), renewals, releases, withdrawals and peeks, from a few
 * callers whose nonces collide on purpose, at instants that let leases expire and tickets lapse.
 * Each step runs on both; their answers and their queues of tickets must agree.
 */
class ConcurrencyMachineParityTest {
  private static final long T0 = 1_800_000_000_000_000_000L;
  private static final long MS = 1_000_000L;
  private static final Pattern SPACE = Pattern.compile(" ");
  private static final Pattern COMMA = Pattern.compile(",");

  @Test
  void theScriptAndTheMachineAgreeOnRandomSequences() {
    RedisServer server = SharedServers.standalone();
    SplittableRandom random = new SplittableRandom(27);
    int steps = 0;
    int queued = 0;
    for (int trial = 0; trial < 40; trial++) {
      String key = "parity-conc-" + UUID.randomUUID();
      long max = 1 + random.nextInt(4);
      ConcurrencyRecord record = null;
      long now = T0;
      for (int s = 0; s < 60; s++) {
        now += random.nextInt(5) == 0 ? random.nextLong(700 * MS) : random.nextLong(40 * MS);
        ConcurrencyCall call = randomCall(random, key, max, record);
        ConcurrencyMachine.Outcome java = ConcurrencyMachine.apply(record, now, call);
        @SuppressWarnings("unchecked")
        List<Object> reply = (List<Object>) server.call(evalArgs(key, ConcurrencyScript.args(call, now, true)));
        ConcurrencyResult lua = ConcurrencyScript.result(reply);
        String where = "trial " + trial + " step " + s + ": " + call + " on " + record;
        assertThat(lua).as(where).isEqualTo(java.result());
        record = java.next();
        assertThat(queue((String) server.call("HGET", key, "q"))).as(where).isEqualTo(tickets(record));
        queued = Math.max(queued, record.waiting());
        steps++;
      }
    }
    assertThat(steps).isEqualTo(2400);
    assertThat(queued).as("the sequences queued several waiters at once").isGreaterThanOrEqualTo(3);
  }

  private static ConcurrencyCall randomCall(SplittableRandom random, String key, long max, ConcurrencyRecord r) {
    long nonce = 1 + random.nextInt(6);
    long weight = 1 + random.nextLong(max);
    long ttl = (50 + random.nextLong(1_000)) * MS;
    long[] leases = r == null ? new long[0] : r.leases();
    int pick = random.nextInt(10);
    if (pick < 4) {
      return ConcurrencyCall.acquireQueued(key, max, nonce, weight, ttl, (100 + random.nextLong(400)) * MS);
    } else if (pick < 6) {
      return ConcurrencyCall.acquire(key, max, nonce, weight, ttl);
    } else if (pick < 8) {
      long token = random.nextInt(20);
      if (leases.length > 0 && random.nextInt(5) > 0) {
        int i = random.nextInt(leases.length / ConcurrencyRecord.LEASE_WORDS) * ConcurrencyRecord.LEASE_WORDS;
        token = leases[i];
        nonce = leases[i + 1];
      }
      return pick == 6 ? ConcurrencyCall.renew(key, max, token, nonce, ttl) : ConcurrencyCall.release(key, max, token, nonce);
    } else if (pick == 8) {
      return ConcurrencyCall.withdraw(key, max, nonce);
    }
    return ConcurrencyCall.peek(key, max);
  }

  private static String[] evalArgs(String key, String[] args) {
    List<String> command = new ArrayList<>(List.of("EVAL", ConcurrencyScript.SCRIPT.body(), "1", key));
    command.addAll(Arrays.asList(args));
    return command.toArray(String[]::new);
  }

  /** The script's "q" field as tickets' words (nonce, weight, expiry). */
  private static List<Long> queue(String q) {
    List<Long> out = new ArrayList<>();
    if (q != null) {
      for (String entry : SPACE.split(q)) {
        String[] f = COMMA.split(entry);
        out.add(Long.parseUnsignedLong(f[0], 16));
        out.add(Long.parseLong(f[1]));
        out.add(Long.parseLong(f[2]) * 1_000_000_000L + Long.parseLong(f[3]));
      }
    }
    return out;
  }

  private static List<Long> tickets(ConcurrencyRecord r) {
    List<Long> out = new ArrayList<>();
    for (long w : r == null ? new long[0] : r.tickets()) {
      out.add(w);
    }
    return out;
  }
}
