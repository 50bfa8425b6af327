package dev.tally.local;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.ConcurrencyLimit;
import dev.tally.Tally;
import dev.tally.tck.ChildJvm;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A concurrency limit on {@code file:} shared by three JVMs of four threads each, one of them
 * killed with {@code kill -9} while it holds leases. From the children's logs of grants and
 * releases (instants the store decided at): never more than {@code maxPermits} permits held by
 * unexpired, unreleased leases at any instant; fencing tokens unique and in the order of the
 * grants; the dead process's permits back by its leases' expiry.
 */
class ConcurrencyMultiProcessTest {
  private static final int CHILDREN = 3;
  private static final int THREADS = 4;
  private static final long MAX = 3;
  private static final long TTL_MILLIS = 400;

  private static final java.util.regex.Pattern SPACE = java.util.regex.Pattern.compile(" ");

  @TempDir
  Path dir;

  /** One lease as the logs tell it: granted at, and held until (released, or expired). */
  private record Held(long token, long weight, long from, long until) {}

  @Test
  void leasesOfThreeProcessesNeverOverlapBeyondMaxAndADeadHoldersPermitsComeBack() throws Exception {
    Path data = dir.resolve("tally-data");
    Path go = dir.resolve("go");
    Path stop = dir.resolve("stop");
    List<ChildJvm> children = new ArrayList<>();
    try {
      for (int i = 0; i < CHILDREN; i++) {
        // the process to be killed holds its leases for up to 300 ms, so it dies holding some
        children.add(start(data, go, stop, dir.resolve("log-" + i), i == 0 ? 300 : 2));
      }
      for (ChildJvm c : children) {
        c.await("READY", 60_000);
      }
      ChildJvm victim = children.get(0);
      Files.createFile(go);
      Thread.sleep(1_000); // real work in the children: they run on the wall clock
      long mark = System.nanoTime();
      // Kill it within 100 ms of a grant it holds for 150-300 ms: it dies holding that lease.
      while (TimeUnit.MILLISECONDS.toNanos(System.currentTimeMillis()) - lastHeld(victim) > 100_000_000L) {
        assertThat(System.nanoTime() - mark).as("the victim got a lease").isLessThan(TimeUnit.SECONDS.toNanos(20));
        Thread.onSpinWait();
      }
      long killing = System.currentTimeMillis();
      victim.kill(); // SIGKILL: its leases are neither released nor cleaned up
      long killedAt = System.currentTimeMillis();
      Thread.sleep(2 * TTL_MILLIS + 500); // the survivors go on past the dead leases' expiry
      Files.createFile(stop);
      for (ChildJvm c : children.subList(1, CHILDREN)) {
        assertThat(c.process().waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(c.process().exitValue()).isZero();
      }

      TreeMap<Long, Held> leases = new TreeMap<>();
      long deadUntil = 0;
      int heldAtDeath = 0;
      for (int i = 0; i < CHILDREN; i++) {
        Map<Long, Held> mine = read(dir.resolve("log-" + i));
        for (Held h : mine.values()) {
          assertThat(leases.put(h.token(), h)).as("token %d granted twice", h.token()).isNull();
          if (i == 0) {
            deadUntil = Math.max(deadUntil, h.until());
            if (h.until() >= TimeUnit.MILLISECONDS.toNanos(killing)) {
              heldAtDeath++;
            }
          }
        }
      }
      assertThat(leases).hasSizeGreaterThan(50);
      // Fencing: in token order, the grants' instants never go back.
      long lastFrom = Long.MIN_VALUE;
      for (Held h : leases.values()) {
        assertThat(h.from()).as("grant of token %d", h.token()).isGreaterThanOrEqualTo(lastFrom);
        lastFrom = h.from();
      }
      // Never more than MAX permits at once: a sweep over starts and ends, an end at an instant
      // before a start at it (expiry at <= now frees).
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
        most = Math.max(most, held);
        assertThat(held).as("permits held at %d", e[0]).isLessThanOrEqualTo(MAX);
      }
      assertThat(most).isEqualTo(MAX);
      System.out.printf("ConcurrencyMultiProcessTest: %d leases, at most %d permits held at once (max %d),"
          + " the killed process died holding %d leases, the last expiring %d ms after its death%n", leases.size(), most,
          MAX, heldAtDeath, TimeUnit.NANOSECONDS.toMillis(deadUntil) - killing);
      // The dead process's leases expired within their ttl of its death, and the survivors were
      // granted permits after that.
      List<String> tail = Files.readAllLines(dir.resolve("log-0"));
      assertThat(heldAtDeath).as("leases the killed process held when it died (killed at %d ms, last grant seen at %d ns;"
          + " its log ends %s)", killing, lastHeld(victim),
          tail.subList(Math.max(0, tail.size() - 4), tail.size())).isPositive();
      assertThat(deadUntil).isLessThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(killedAt + TTL_MILLIS));
      long deadline = deadUntil;
      assertThat(leases.values().stream().filter(h -> h.from() > deadline).count()).isPositive();
      try (Tally t = Tally.open("file:" + data)) {
        ConcurrencyLimit limit = t.concurrency("jobs", MAX);
        assertThat(limit.inUse()).as("every permit back").isZero();
        assertThat(limit.tryAcquire(java.time.Duration.ofSeconds(1)).orElseThrow().fencingToken())
            .isGreaterThan(leases.lastKey());
      }
    } finally {
      children.forEach(ChildJvm::close);
    }
  }

  private static Map<Long, Held> read(Path log) throws IOException {
    Map<Long, long[]> grants = new HashMap<>();
    Map<Long, Long> releases = new HashMap<>();
    if (Files.exists(log)) {
      for (String line : Files.readAllLines(log, StandardCharsets.UTF_8)) {
        String[] f = SPACE.split(line.trim());
        if (f[0].equals("G") && f.length == 5) {
          grants.put(Long.parseLong(f[1]), new long[] {Long.parseLong(f[2]), Long.parseLong(f[3]), Long.parseLong(f[4])});
        } else if (f[0].equals("R") && f.length == 3) {
          releases.put(Long.parseLong(f[1]), Long.parseLong(f[2]));
        } // else a line cut by the kill
      }
    }
    Map<Long, Held> out = new HashMap<>();
    grants.forEach((token, g) -> out.put(token, new Held(token, g[0], g[1],
        Math.min(g[2], releases.getOrDefault(token, Long.MAX_VALUE)))));
    return out;
  }

  /** The instant (wall clock, ns) of the last grant {@code victim} said it holds, or 0. */
  private static long lastHeld(ChildJvm victim) {
    List<String> held = victim.linesStartingWith("HELD ");
    if (held.isEmpty()) {
      return 0;
    }
    String l = held.get(held.size() - 1);
    return Long.parseLong(l.substring(l.lastIndexOf(' ') + 1));
  }

  private static ChildJvm start(Path data, Path go, Path stop, Path log, long holdMillis) {
    return ChildJvm.start(LeaseWorker.class, data.toString(), go.toString(), stop.toString(), log.toString(), "jobs",
        Long.toString(MAX), Long.toString(TTL_MILLIS), Integer.toString(THREADS), Long.toString(holdMillis));
  }
}
