package dev.tally.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.tck.Internals;
import dev.tally.spi.LimiterRecord;
import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.Tally;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.Store;
import dev.tally.tck.ManualTimeSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The schema's {@code tally_limit} function against tally-core's {@code LimiterMachine} where the
 * kit's limiter vectors ({@link LimiterVectorsTest}) do not reach: the layout of a record, and a
 * caller more than a day behind a stored window, whose call the store sends again with other
 * quota boundaries. Each limit's own state ({@link Decision#limits()}) is compared with the
 * machine's once the machine reports it; until then with each limit's algorithm run alone over
 * its words ({@link #eachLimit}).
 */
class LimiterParityTest {
  private static PostgresServer server;
  private static Connection db; // one connection for the test's own reads: a new one per read costs a backend
  private ManualTimeSource clock;

  @BeforeAll
  static void start() {
    server = PostgresServer.shared();
    try {
      db = server.connect();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @AfterAll
  static void closeReader() throws SQLException {
    db.close(); // the shared server outlives this class
  }

  /**
   * {@code actual} is {@code expected}, the machine's answer. Each limit's state is the machine's
   * too where the machine reports it; where it does not (it reports one limit for several), the
   * rest of the decision must be the machine's and each limit as {@link #eachLimit} computes it.
   */
  private static void assertDecides(Object actual, Object expected, List<Decision.LimitState> expectedLimits,
      String context) {
    if (expected instanceof Decision d && d.limits().size() == 1 && expectedLimits.size() > 1) {
      assertThat(actual).as(context).isInstanceOf(Decision.class);
      Decision a = (Decision) actual;
      Decision alone = new Decision(a.allowed(), a.remaining(), a.limit(), a.retryAfterNanos(), a.resetAfterNanos(),
          a.limitIndex());
      assertThat(a.mismatch() == Decision.Mismatch.NONE ? alone : alone.withMismatch(a.mismatch(), a.storedVersion()))
          .as(context).isEqualTo(expected);
      assertThat(a.limits()).as(context + ": each limit").isEqualTo(expectedLimits);
    } else {
      assertThat(actual).as(context).isEqualTo(expected);
    }
  }

  /**
   * Each limit's state after {@code out}, from the algorithms themselves: a peek by a machine of
   * that limit alone over its words of the new record, at the instant decided at (a step leaves
   * every limit normalized there, so the peek changes nothing); every limit full when no record
   * is left, with the limits the step ran on.
   */
  private static List<Decision.LimitState> eachLimit(LimiterCall handle, LimiterRecord stored, LimiterOperation op,
      LimiterOutcome out) {
    List<Decision.LimitState> each = new ArrayList<>();
    long[] r = out.record();
    if (r == null) {
      long[] words = stored == null || stored.isTombstone() ? null : stored.words();
      boolean storedLimits = op != LimiterOperation.RESET && op != LimiterOperation.RECONFIGURE
          && words != null && words.length > 0 && words[0] != 0
          && out.decision().mismatch() != Decision.Mismatch.UPGRADED; // the caller's limits replaced them
      int n = storedLimits ? words.length / 6 : handle.limits().size();
      for (int i = 0; i < n; i++) {
        long limit = storedLimits ? words[6 * i + 1] : handle.limits().get(i).limit();
        each.add(new Decision.LimitState(i, limit, limit, 0));
      }
      return each;
    }
    for (int i = 0; i < r.length / 6; i++) {
      Limit alone = i < handle.limits().size() ? handle.limits().get(i) : Limit.tokenBucket(1, Duration.ofSeconds(1));
      long[] words = Arrays.copyOfRange(r, 6 * i, 6 * i + 6);
      Decision d = Internals.referenceLimiter("each", List.of(alone))
          .apply(new LimiterRecord(out.decidedAt(), words), out.decidedAt(), LimiterOperation.PEEK, 1).decision();
      each.add(new Decision.LimitState(i, d.remaining(), d.limit(), d.resetAfterNanos()));
    }
    return each;
  }

  /** The record PostgreSQL holds, or null. */
  private static long[] storedRecord(String key) {
    return select(key, rs -> {
      Long[] words = (Long[]) rs.getArray(1).getArray();
      long[] r = new long[words.length];
      for (int i = 0; i < r.length; i++) {
        r[i] = words[i];
      }
      return r;
    });
  }

  /** The row's decision instant. */
  private static Long storedDecidedAt(String key) {
    return select(key, rs -> rs.getLong(3));
  }

  /** The row's exp, or null without a row. */
  private static Long storedExpiry(String key) {
    return select(key, rs -> rs.getLong(2));
  }

  private interface Reader<T> {
    T read(ResultSet rs) throws SQLException;
  }

  private static <T> T select(String key, Reader<T> reader) {
    try (PreparedStatement ps = db.prepareStatement("SELECT rec, exp, at FROM tally WHERE key = ?")) {
      ps.setString(1, key);
      try (ResultSet rs = ps.executeQuery()) {
        return rs.next() ? reader.read(rs) : null;
      }
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  private static void delete(String key) {
    try (PreparedStatement ps = db.prepareStatement("DELETE FROM tally WHERE key = ?")) {
      ps.setString(1, key);
      ps.executeUpdate();
    } catch (SQLException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void recordsReadAsTheCoreWritesThem() {
    clock = new ManualTimeSource();
    try (Tally tally = Tally.builder(server.uri("")).timeSource(clock).build()) {
      String key = "parity-layout";
      LimiterCall call = Internals.referenceLimiter(key, List.of(Limit.tokenBucket(10, Duration.ofSeconds(1)),
          Limit.slidingWindow(100, Duration.ofMinutes(1))));
      Internals.storeOf(tally).limit(call, LimiterOperation.ACQUIRE, 3);
      long[] expected = call.apply(null, clock.nanos(), LimiterOperation.ACQUIRE, 3).record();
      assertThat(storedRecord(key)).isEqualTo(expected);
      assertThat(Arrays.toString(expected)).isEqualTo("[1, 10, 100000000, 1794096000300000000, 0, 0,"
          + " 5, 100, 60000000000, 1794096000000000000, 3, 0]");
      delete(key);
    }
  }

  /**
   * A caller whose clock is more than a day behind a stored window's start: the function decides at
   * that start, which the quota boundaries the caller computed around its own clock do not reach.
   * The store sends the call again with boundaries around the instant the function names.
   */
  @Test
  void aCallerADayBehindAStoredWindowStillGetsTheMachinesDecision() {
    clock = new ManualTimeSource(Instant.parse("2026-11-08T12:00:00Z"));
    String key = "parity-days-behind";
    LimiterCall call = Internals.referenceLimiter(key, List.of(Limit.fixedWindow(10, Duration.ofHours(1)),
        Limit.quota(100, Limit.Period.DAY, ZoneOffset.UTC)));
    delete(key);
    try (Tally tally = Tally.builder(server.uri("")).timeSource(clock).build()) {
      Store store = Internals.storeOf(tally);
      LimiterOutcome first = call.apply(null, clock.nanos(), LimiterOperation.ACQUIRE, 1);
      assertDecides(store.limit(call, LimiterOperation.ACQUIRE, 1), first.decision(),
          eachLimit(call, null, LimiterOperation.ACQUIRE, first), "the first call");
      clock.set(Instant.parse("2026-11-06T11:00:00Z")); // another caller, 2 days and 1 hour behind
      LimiterRecord stored = new LimiterRecord(first.decidedAt(), first.record().clone());
      LimiterOutcome second = call.apply(stored, clock.nanos(), LimiterOperation.RECONFIGURE, 0);
      assertDecides(store.limit(call, LimiterOperation.RECONFIGURE, 0), second.decision(),
          eachLimit(call, stored, LimiterOperation.RECONFIGURE, second), "the call behind");
      assertThat(storedRecord(key)).isEqualTo(second.record());
    } finally {
      delete(key);
    }
  }
}
