package dev.tally.tck;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.ConcurrencyLimit;
import dev.tally.Tally;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A concurrency limit shared by 50 threads in three OS processes ({@link ConcurrencyWorker}):
 * holders that finish, one process killed with {@code kill -9} while it holds leases, and one
 * frozen with {@code SIGSTOP} past its leases' expiry and then resumed. From the children's logs
 * of grants and releases, with the instants the store decided them at:
 * <ul>
 *   <li>never more than {@code maxPermits} permits held by unexpired, unreleased leases at any
 *       instant;
 *   <li>fencing tokens unique, and in the order of the grants;
 *   <li>the killed process's permits free by its death plus the lease ttl plus {@link #CLOCK_SLACK_MILLIS}
 *       (the store's clock against this process's), and granted again after that;
 *   <li>the frozen holders' writes after they resumed refused by a {@link FencedFile}, since newer
 *       holders wrote meanwhile (with several permits, holders at once refuse each other's older
 *       tokens too: the count printed is of both).
 * </ul>
 * A store module extends this class and names its URI. The store's clock and the children's and
 * this process's wall clocks are taken to be one host's clock: every store here runs on this
 * host. {@code mem:} lives in one process and has no such case.
 */
public abstract class ConcurrencyProcessesContract {
  private static final int[] THREADS = {17, 17, 16}; // the victim, the frozen, the steady: 50
  private static final long MAX = 5;
  /** The store's clock and this process's read apart by up to this much (one host, two reads). */
  private static final long CLOCK_SLACK_MILLIS = 50;
  private static final long START_MILLIS = 60_000;
  private static final Pattern SPACE = Pattern.compile(" ");

  @TempDir
  Path dir;

  /** The store's URI, as a child process opens it. */
  protected abstract String uri();

  /**
   * The leases' ttl. The long holders (the victim, the frozen) hold theirs for 3/8 to 3/4 of it,
   * so they die and freeze holding one; a store whose steps take a large part of that on a loaded
   * machine takes a longer one, or its holders would see their leases expire before they release
   * them.
   */
  protected long leaseTtlMillis() {
    return 400;
  }

  /**
   * Whether the frozen process's calls in flight when it stopped may fail when it resumes, at most
   * one per thread. Only a store that ends a session left idle in a transaction past the call's
   * timeout, so that a paused client holds no row lock for the others, fails them (PostgreSQL);
   * on any other store they must succeed, as every other child's calls must.
   */
  protected boolean frozenCallsMayFail() {
    return false;
  }

  /** One lease as the logs tell it: granted at, and held until (released, or expired). */
  private record Held(long token, long weight, long from, long until, boolean released) {}

  @Test
  public void fiftyThreadsInThreeProcessesNeverHoldMoreThanMaxThroughAKillAndAFreeze() throws Exception {
    String uri = uri();
    long ttlMillis = leaseTtlMillis();
    String name = "jobs-" + UUID.randomUUID().toString().substring(0, 8);
    Path go = dir.resolve("go");
    Path stop = dir.resolve("stop");
    List<ChildJvm> children = new ArrayList<>();
    try {
      for (int i = 0; i < THREADS.length; i++) {
        children.add(ChildJvm.start(ConcurrencyWorker.class, uri, name, go.toString(), stop.toString(),
            dir.resolve("log-" + i).toString(), dir.resolve("fence").toString(), Long.toString(MAX),
            Long.toString(ttlMillis), Integer.toString(THREADS[i]), Long.toString(i < 2 ? ttlMillis * 3 / 4 : 2)));
      }
      for (ChildJvm c : children) {
        c.await("READY", START_MILLIS);
      }
      ChildJvm victim = children.get(0);
      ChildJvm frozen = children.get(1);
      Files.createFile(go);
      Thread.sleep(1_000); // real work in the children: they run on the wall clock

      awaitHolding(frozen);
      long frozenAt = ConcurrencyWorker.wallNanos();
      signal(frozen, "STOP");
      // Frozen past its leases' expiry: the others are granted its permits and write with newer tokens.
      Thread.sleep(ttlMillis + 600);
      awaitHolding(victim);
      long killing = ConcurrencyWorker.wallNanos();
      victim.kill(); // SIGKILL: its leases are neither released nor cleaned up
      long killedAt = ConcurrencyWorker.wallNanos();
      signal(frozen, "CONT");
      Thread.sleep(2 * ttlMillis + 500); // the survivors go on past the dead leases' expiry
      Files.createFile(stop);
      for (ChildJvm c : children.subList(1, children.size())) {
        assertThat(c.process().waitFor(60, TimeUnit.SECONDS)).as("child %d stopped", c.process().pid()).isTrue();
        assertThat(c.process().exitValue()).isZero();
      }

      TreeMap<Long, Held> leases = new TreeMap<>();
      Map<Long, Boolean> fencedWrites = new HashMap<>();
      List<String> unknown = new ArrayList<>();
      List<String> unknownWhileFrozen = new ArrayList<>(); // tolerated where frozenCallsMayFail()
      long deadUntil = 0;
      int heldAtDeath = 0;
      List<Long> heldThroughFreeze = new ArrayList<>();
      for (int i = 0; i < children.size(); i++) {
        List<String> failed = (i == 1 && frozenCallsMayFail()) ? unknownWhileFrozen : unknown;
        for (Held h : read(dir.resolve("log-" + i), fencedWrites, failed).values()) {
          assertThat(leases.put(h.token(), h)).as("token %d granted twice", h.token()).isNull();
          if (i == 0) {
            deadUntil = Math.max(deadUntil, h.until());
            heldAtDeath += h.until() >= killing ? 1 : 0;
          }
          // Granted before the freeze, not released (its release came after its expiry), and written
          // after the resume: held through the freeze.
          if (i == 1 && h.from() < frozenAt && !h.released() && fencedWrites.containsKey(h.token())) {
            heldThroughFreeze.add(h.token());
          }
        }
      }
      assertThat(unknown).as("acquires and releases that failed on a healthy store").isEmpty();
      assertThat(unknownWhileFrozen).as("calls of the frozen process that failed").hasSizeLessThanOrEqualTo(THREADS[1]);
      assertThat(leases).hasSizeGreaterThan(20);
      // Fencing: in token order, the grants' instants never go back.
      long lastFrom = Long.MIN_VALUE;
      for (Held h : leases.values()) {
        assertThat(h.from()).as("grant of token %d", h.token()).isGreaterThanOrEqualTo(lastFrom);
        lastFrom = h.from();
      }
      long most = sweep(leases, Long.MIN_VALUE);
      assertThat(most).isEqualTo(MAX);
      // The dead process's leases expired within their ttl of its death, and their permits were
      // all granted again after that.
      assertThat(heldAtDeath).as("leases the killed process held when it died").isPositive();
      assertThat(deadUntil).as("the killed process's last lease's expiry, against its death + ttl + slack")
          .isLessThanOrEqualTo(killedAt + TimeUnit.MILLISECONDS.toNanos(ttlMillis + CLOCK_SLACK_MILLIS));
      assertThat(sweep(leases, deadUntil)).as("permits held at once after the dead leases expired").isEqualTo(MAX);
      // The frozen holders resumed and wrote with their stale tokens: refused, newer holders having written.
      assertThat(heldThroughFreeze).as("leases held through the freeze").isNotEmpty();
      for (long token : heldThroughFreeze) {
        assertThat(fencedWrites.get(token)).as("the write of token %d, held through the freeze", token).isFalse();
      }
      long refused = fencedWrites.values().stream().filter(ok -> !ok).count();
      System.out.printf("[concurrency processes] %s: %d leases by %d threads in 3 processes, at most %d permits"
          + " held at once (max %d); the killed process died holding %d leases, the last expiring %d ms after its"
          + " death; %d fenced writes refused, the %d of the leases held through the freeze among them%n", uri.replaceAll("\\?.*", ""),
          leases.size(), THREADS[0] + THREADS[1] + THREADS[2], most, MAX, heldAtDeath,
          TimeUnit.NANOSECONDS.toMillis(deadUntil - killing), refused, heldThroughFreeze.size());
      try (Tally t = Tally.open(uri)) {
        ConcurrencyLimit limit = t.concurrency(name, MAX);
        assertThat(limit.inUse()).as("every permit back").isZero();
        assertThat(limit.tryAcquire(Duration.ofSeconds(1)).orElseThrow().fencingToken())
            .isGreaterThan(leases.lastKey());
      }
    } finally {
      for (ChildJvm c : children) {
        if (c.process().isAlive()) {
          signal(c, "CONT"); // a frozen child ignores SIGKILL's wait otherwise
        }
        c.close();
      }
    }
  }

  /**
   * The most permits held at once from {@code after} on, failing if ever more than {@link #MAX}:
   * a sweep over starts and ends, an end at an instant before a start at it (expiry at or before
   * now frees).
   */
  private static long sweep(Map<Long, Held> leases, long after) {
    List<long[]> events = new ArrayList<>();
    for (Held h : leases.values()) {
      events.add(new long[] {h.from(), 1, h.weight()});
      events.add(new long[] {h.until(), 0, -h.weight()});
    }
    events.sort((a, b) -> a[0] != b[0] ? Long.compare(a[0], b[0]) : Long.compare(a[1], b[1]));
    long held = 0;
    long most = 0;
    for (long[] e : events) {
      held += e[2];
      assertThat(held).as("permits held at %d", e[0]).isLessThanOrEqualTo(MAX);
      if (e[0] > after) {
        most = Math.max(most, held);
      }
    }
    return most;
  }

  private static Map<Long, Held> read(Path log, Map<Long, Boolean> fencedWrites, List<String> unknown)
      throws IOException {
    Map<Long, long[]> grants = new HashMap<>();
    Map<Long, Long> releases = new HashMap<>();
    if (Files.exists(log)) {
      for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
        String[] f = SPACE.split(line.trim(), 6);
        switch (f[0]) {
          case "G" -> {
            if (f.length == 5) {
              grants.put(Long.parseLong(f[1]), new long[] {Long.parseLong(f[2]), Long.parseLong(f[3]),
                  Long.parseLong(f[4])});
            }
          }
          case "W" -> {
            if (f.length == 3) {
              fencedWrites.put(Long.parseLong(f[1]), f[2].equals("1"));
            }
          }
          case "R" -> {
            if (f.length == 3) {
              releases.put(Long.parseLong(f[1]), Long.parseLong(f[2]));
            }
          }
          case "U" -> unknown.add(line);
          default -> { } // a line cut by the kill
        }
      }
    }
    Map<Long, Held> out = new HashMap<>();
    grants.forEach((token, g) -> out.put(token, new Held(token, g[0], g[1],
        Math.min(g[2], releases.getOrDefault(token, Long.MAX_VALUE)), releases.containsKey(token))));
    return out;
  }

  /** Waits until {@code child} was granted a lease it holds for a while, within the last 100 ms. */
  private static void awaitHolding(ChildJvm child) {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
    while (ConcurrencyWorker.wallNanos() - lastHeld(child) > TimeUnit.MILLISECONDS.toNanos(100)) {
      assertThat(System.nanoTime()).as("child %d got a lease to hold within 60 s; it printed %s", child.process().pid(),
          child.linesStartingWith("")).isLessThan(deadline);
      Thread.onSpinWait();
    }
  }

  private static long lastHeld(ChildJvm child) {
    List<String> held = child.linesStartingWith("HELD ");
    if (held.isEmpty()) {
      return 0;
    }
    String l = held.get(held.size() - 1);
    return Long.parseLong(l.substring(l.lastIndexOf(' ') + 1));
  }

  private static void signal(ChildJvm child, String signal) throws IOException, InterruptedException {
    Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(child.process().pid())).start();
    assertThat(kill.waitFor(10, TimeUnit.SECONDS) && kill.exitValue() == 0).as("kill -%s", signal).isTrue();
  }
}
