package dev.tally.tck;

import dev.tally.JointDecision;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import dev.tally.Tally;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * A child process of {@link JointDecisionProcessesContract}: opens the store at URI, prints
 * READY, waits for the GO file, then on THREADS threads decides jointly on
 * [{@code user:u}, {@code tenant:u/3}, {@code global}] for one permit, CALLS times a thread (a
 * thread stops early once the global limiter has refused it a few times: the limiters have no
 * refill, so everything after that is refused). Every answer is written to LOG, one line a call:
 *
 * <pre>
 * G u          granted: one permit taken from user:u, its tenant and global
 * R u mask     refused (bit 0: the user refused, bit 1: the tenant, bit 2: the global)
 * U u error    the call failed (StoreException): whether it took anything is unknown
 * </pre>
 *
 * then prints DONE. Usage: {@code JointDecisionWorker URI TAG GO LOG THREADS CALLS SEED}.
 */
public final class JointDecisionWorker {
  static final int USERS = 6;
  static final int USERS_PER_TENANT = 3;
  static final int TENANTS = USERS / USERS_PER_TENANT;
  static final long USER_CAPACITY = 15;
  static final long TENANT_CAPACITY = 40;
  static final long GLOBAL_CAPACITY = 70;
  /**
   * Capacity per day: over a run of seconds a limiter refills less than a permit, so "taken" is
   * capacity minus available, exactly, and "over its limit" means more grants than capacity.
   */
  static final Duration PERIOD = Duration.ofDays(1);
  /**
   * How often each user is chosen: user 0 is hot and runs out first; tenant 0 (users 0-2) draws
   * 16 of 19 calls and runs out while tenant 1 has room; then tenant 1's users take global's
   * last permits (tenant 0's 40 and tenant 1's up to 40 exceed its 70). Every kind of limiter
   * runs out, and each refuses while the others in its sets still have permits.
   */
  private static final int[] WEIGHTS = {10, 3, 3, 1, 1, 1};
  /** Refusals by the global limiter after which a thread stops: all is spent by then. */
  private static final int GLOBAL_REFUSALS_TO_STOP = 3;

  private JointDecisionWorker() {}

  /** The limiters of one decision for user {@code u}, named under {@code tag}, in a fixed order. */
  static List<RateLimiter> set(Tally tally, String tag, int u) {
    return List.of(
        tally.limiter(tag + ":user:" + u, Limit.tokenBucket(USER_CAPACITY, PERIOD)),
        tally.limiter(tag + ":tenant:" + u / USERS_PER_TENANT, Limit.tokenBucket(TENANT_CAPACITY, PERIOD)),
        tally.limiter(tag + ":global", Limit.tokenBucket(GLOBAL_CAPACITY, PERIOD)));
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 7) {
      throw new IllegalArgumentException("usage: JointDecisionWorker URI TAG GO LOG THREADS CALLS SEED");
    }
    String uri = args[0];
    String tag = args[1];
    Path go = Path.of(args[2]);
    Path log = Path.of(args[3]);
    int threads = Integer.parseInt(args[4]);
    int calls = Integer.parseInt(args[5]);
    long seed = Long.parseLong(args[6]);
    try (Tally tally = Tally.open(uri); Writer out = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
      System.out.println("READY");
      System.out.flush();
      while (!Files.exists(go)) {
        Thread.sleep(1);
      }
      List<Thread> workers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        SplittableRandom random = new SplittableRandom(seed * 31 + t);
        Thread w = new Thread(() -> decide(tally, tag, calls, random, out), "joint-worker-" + t);
        w.start();
        workers.add(w);
      }
      for (Thread w : workers) {
        w.join();
      }
    }
    System.out.println("DONE");
    System.out.flush();
  }

  private static void decide(Tally tally, String tag, int calls, SplittableRandom random, Writer out) {
    int total = 0;
    for (int w : WEIGHTS) {
      total += w;
    }
    int globalRefusals = 0;
    for (int i = 0; i < calls && globalRefusals < GLOBAL_REFUSALS_TO_STOP; i++) {
      int pick = random.nextInt(total);
      int u = 0;
      while (pick >= WEIGHTS[u]) {
        pick -= WEIGHTS[u++];
      }
      String line;
      try {
        JointDecision d = tally.decide(set(tally, tag, u), 1);
        if (d.allowed()) {
          line = "G " + u;
        } else {
          int mask = 0;
          for (int k = 0; k < 3; k++) {
            mask |= d.decision(k).allowed() ? 0 : 1 << k;
          }
          globalRefusals += (mask & 4) != 0 ? 1 : 0;
          line = "R " + u + " " + mask;
        }
      } catch (StoreException e) {
        line = "U " + u + " " + e;
      }
      try {
        synchronized (out) {
          out.write(line.replace('\n', ' ') + "\n");
        }
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    }
  }
}
