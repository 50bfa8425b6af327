package dev.tally.tck;

import static dev.tally.tck.JointDecisionWorker.GLOBAL_CAPACITY;
import static dev.tally.tck.JointDecisionWorker.TENANTS;
import static dev.tally.tck.JointDecisionWorker.TENANT_CAPACITY;
import static dev.tally.tck.JointDecisionWorker.USERS;
import static dev.tally.tck.JointDecisionWorker.USERS_PER_TENANT;
import static dev.tally.tck.JointDecisionWorker.USER_CAPACITY;
import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.RateLimiter;
import dev.tally.Tally;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Joint decisions ({@link Tally#decide}) from several OS processes at once, each of several
 * threads, on overlapping sets: six users, two tenants of three users each, one global limiter,
 * every call one permit from [user, its tenant, global] ({@link JointDecisionWorker}). The
 * limiters do not refill during the run, and the demand is skewed so that a user, a tenant and
 * the global limiter all run out. The children log every answer; after they exit, the limiters'
 * state read from the store must show, for every key, exactly the permits of the acknowledged
 * grants that included it: none over its capacity, and nothing taken by a refused decision from
 * the limiters that would have granted. A call that failed ({@code StoreException}) may or may not
 * have taken its permits; a store declares how many it may see ({@link #unknownOutcomesAllowed}),
 * zero by default, and each widens its keys' bound by one.
 *
 * <p>What the in-process case of {@link JointLimiterContract} cannot show: processes share no
 * lock, no connection and no client-side batching, only the store. A store module extends this
 * class and names its URI; {@code mem:} lives in one process and has no such case. Tagged
 * {@code joint-limiters} with the in-process suite.
 */
@Tag("joint-limiters")
public abstract class JointDecisionProcessesContract {
  private static final int CHILDREN = 3;
  private static final int THREADS = 4;
  private static final long START_MILLIS = 60_000;
  private static final long RUN_MILLIS = 120_000;
  private static final Pattern SPACE = Pattern.compile(" ");

  @TempDir
  Path dir;

  /** The store's URI, as a child process opens it (no test clock: each runs on its own). */
  protected abstract String uri();

  /**
   * The name prefix of this run's limiters, unique to it. A hash tag: on Redis Cluster every key
   * of one joint decision must be in one slot, and the run's three kinds of keys all meet in
   * some decision, so they all carry the one tag.
   */
  protected String tag() {
    return "{joint-procs-" + UUID.randomUUID().toString().substring(0, 8) + "}";
  }

  /** Decisions per thread, at most (a thread stops early once everything is spent). */
  protected int callsPerThread() {
    return 60;
  }

  /** Calls that may fail with a StoreException on a healthy server: none, unless a store says why. */
  protected int unknownOutcomesAllowed() {
    return 0;
  }

  @Test
  public void processesDecidingJointlyTakeAllOrNothingAndNoKeyPassesItsLimit() throws Exception {
    String uri = uri();
    String tag = tag();
    Path go = dir.resolve("go");
    long started = System.nanoTime();
    List<ChildJvm> children = new ArrayList<>();
    try {
      for (int c = 0; c < CHILDREN; c++) {
        children.add(ChildJvm.start(JointDecisionWorker.class, uri, tag, go.toString(),
            dir.resolve("log-" + c).toString(), Integer.toString(THREADS), Integer.toString(callsPerThread()),
            Integer.toString(c)));
      }
      for (ChildJvm c : children) {
        c.await("READY", START_MILLIS);
      }
      Files.createFile(go);
      for (ChildJvm c : children) {
        c.await("DONE", RUN_MILLIS);
        assertThat(c.process().waitFor()).as("exit status of child %d", c.process().pid()).isZero();
      }
    } finally {
      children.forEach(ChildJvm::close);
    }

    // Acknowledged grants and unknown outcomes by key, from the children's logs.
    Map<String, long[]> byKey = new LinkedHashMap<>(); // key -> {grants, unknowns, capacity}
    for (int u = 0; u < USERS; u++) {
      byKey.put(tag + ":user:" + u, new long[] {0, 0, USER_CAPACITY});
    }
    for (int t = 0; t < TENANTS; t++) {
      byKey.put(tag + ":tenant:" + t, new long[] {0, 0, TENANT_CAPACITY});
    }
    byKey.put(tag + ":global", new long[] {0, 0, GLOBAL_CAPACITY});
    long calls = 0;
    long grants = 0;
    long unknowns = 0;
    long[] refusedBy = new long[3];
    List<String> failures = new ArrayList<>();
    for (int c = 0; c < CHILDREN; c++) {
      for (String line : Files.readAllLines(dir.resolve("log-" + c), StandardCharsets.UTF_8)) {
        String[] f = SPACE.split(line, 3);
        int u = Integer.parseInt(f[1]);
        List<String> keys = List.of(tag + ":user:" + u, tag + ":tenant:" + u / USERS_PER_TENANT, tag + ":global");
        calls++;
        switch (f[0]) {
          case "G" -> {
            grants++;
            keys.forEach(k -> byKey.get(k)[0]++);
          }
          case "R" -> {
            int mask = Integer.parseInt(f[2]);
            for (int k = 0; k < 3; k++) {
              refusedBy[k] += (mask >> k) & 1;
            }
          }
          case "U" -> {
            unknowns++;
            keys.forEach(k -> byKey.get(k)[1]++);
            if (failures.size() < 5) {
              failures.add(f[2]);
            }
          }
          default -> throw new AssertionError("unreadable line in log-" + c + ": " + line);
        }
      }
    }
    long millis = (System.nanoTime() - started) / 1_000_000;
    System.out.printf("[joint processes] %s: %d calls from %d processes of %d threads in %d ms: %d granted,"
        + " refused by a user %d, a tenant %d, the global %d times; %d unknown%s%n", uri.replaceAll("\\?.*", ""),
        calls, CHILDREN, THREADS, millis, grants, refusedBy[0], refusedBy[1], refusedBy[2], unknowns,
        failures.isEmpty() ? "" : " " + failures);
    assertThat(unknowns).as("calls that failed (first ones: %s)", failures).isLessThanOrEqualTo(unknownOutcomesAllowed());

    // The state the store kept, against the acknowledged grants, key by key.
    long usersOut = 0;
    long tenantsOut = 0;
    try (Tally tally = Tally.open(uri)) {
      for (int u = 0; u < USERS; u++) {
        List<RateLimiter> set = JointDecisionWorker.set(tally, tag, u);
        for (RateLimiter l : set) {
          long[] k = byKey.get(l.name());
          long available = l.available();
          long taken = k[2] - available;
          assertThat(taken).as("permits taken from %s (capacity %d, %d acknowledged grants, %d unknown outcomes)",
              l.name(), k[2], k[0], k[1]).isBetween(k[0], k[0] + k[1]).isLessThanOrEqualTo(k[2]);
        }
        usersOut += set.get(0).available() == 0 ? 1 : 0;
        if (u % USERS_PER_TENANT == 0) {
          tenantsOut += set.get(1).available() == 0 ? 1 : 0;
        }
      }
      // Every kind of limiter ran out, so each refused while others in its sets could grant.
      assertThat(JointDecisionWorker.set(tally, tag, 0).get(2).available()).as("the global limiter's permits left")
          .isZero();
    }
    assertThat(tenantsOut).as("tenants that ran out").isPositive();
    assertThat(usersOut).as("users that ran out").isPositive();
    assertThat(grants).as("grants").isBetween(GLOBAL_CAPACITY - unknowns, GLOBAL_CAPACITY);
  }
}
