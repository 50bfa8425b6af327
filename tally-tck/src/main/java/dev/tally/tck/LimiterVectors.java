package dev.tally.tck;

import dev.tally.Decision;
import dev.tally.spi.JointLimit;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import dev.tally.spi.LimiterRecord;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.OperationRecord;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Test vectors for rate limiters, written by the Java limiter machine: the one specification
 * that every port of it (Redis' {@code limiter.lua}, PostgreSQL's {@code limit_step}) and every
 * store that runs it (memory, file, DynamoDB) replays with {@link LimiterVectorReplay}.
 *
 * <p>A vector is one key's timeline: calls (a limiter handle with its limits and version, an
 * operation, permits, and the instant of the caller's clock) and, for each, what the machine
 * answers (every field of the {@link Decision}, or the class of the exception it throws) and what
 * the store must hold afterwards (the record's words, its decision instant and its expiry). The
 * timelines are drawn from a seed by {@link RandomTimelines}, which favours the edges: every
 * algorithm (token and leaky buckets, GCRA, fixed and sliding windows, calendar quotas in zones
 * with odd offsets and daylight saving), several limits per key, handles of other limits and
 * versions on one key (upgrades, adoptions, conflicts), reconfigurations, refunds, top-ups,
 * resets, warm-ups (cold starts, the ramp, idling back to cold, turning it on and off), counts
 * and spans near 2^53, 2^61 and {@link Long#MAX_VALUE}, permits of 0, the limit and one past it,
 * starts on day, month, daylight-saving and leap-year boundaries, and a clock that stands still,
 * creeps by a nanosecond, jumps to just before a wait ends, or steps back.
 *
 * <p>Some calls carry an {@link OperationId} ({@link dev.tally.spi.Store#applyOnce}), and some
 * repeat an earlier call's id, right after it or later in the timeline (within the retention
 * window): an exact retry is answered with the first decision as {@link OperationRecord} keeps it
 * and changes no state; the id for another operation is refused
 * ({@link dev.tally.OperationIdConflictException}); the id of a call that threw records nothing,
 * so its exact retry is decided afresh.
 *
 * <p><b>What the store keeps decides the answer too.</b> The machine decides at
 * {@code max(now, decidedAt)} over the record the store hands it, so a clock that steps back
 * is answered according to what the store remembered: whether it keeps the decision instant on
 * a call that changed nothing, and past a limiter that is full again. Stores differ there (see
 * {@link Keeping}); the calls of a seed are the same for every store, the answers are the
 * machine's over what that store keeps.
 */
public final class LimiterVectors {
  private static final long NS = 1_000_000_000L;

  /** The seed CI replays; {@code -Dtally.vectors.seed=N} replays another. */
  public static final long SEED = Long.getLong("tally.vectors.seed", 20261108L);

  /** Vectors per port in CI, of {@link #LENGTH} calls each: 100,000 calls. */
  public static final int COUNT = Integer.getInteger("tally.vectors.count", 2_500);

  /** Calls per vector. */
  public static final int LENGTH = 40;

  /** In 100 calls, about how many repeat an earlier call's operation id (a quarter of them for another operation). */
  static final int REPEATS = 10;

  /** In 100 calls, about how many (peeks aside) carry an operation id of their own. */
  static final int WITH_ID = 12;

  /** In 100 calls, about how many are joint decisions over the vector's key and one or two others. */
  static final int JOINT = 6;

  /** The shortest retention of operation ids a replaying store may have: the default. */
  static final long RETENTION_NANOS = OperationId.DEFAULT_RETENTION.toNanos();

  /** Starting instants: boundaries of days, months, daylight saving, years and long windows. */
  public static final List<Instant> STARTS = List.of(
      Instant.parse("2026-11-08T00:00:00Z"),
      Instant.parse("2026-11-30T22:59:59.999999990Z"),  // a Paris month ends at 23:00Z
      Instant.parse("2026-03-29T00:59:59.999999999Z"),  // Paris springs forward at 01:00Z
      Instant.parse("2026-10-25T00:59:59.999999999Z"),  // and falls back
      Instant.parse("2026-11-01T05:59:59.999999999Z"),  // New York falls back
      Instant.parse("2026-12-31T23:59:59.999999999Z"),
      Instant.parse("2019-12-31T23:59:59.5Z"),
      Instant.EPOCH.plus(Duration.ofDays(3650 * 5)),    // a boundary of ten-year windows
      Instant.parse("2099-02-28T23:59:59Z"),
      Instant.parse("2100-02-28T23:59:59Z"));           // not a leap year

  private LimiterVectors() {}

  /**
   * One call of a vector, at {@code now} on the caller's clock (epoch nanoseconds), with an
   * {@link OperationId} or none (null): a call with an id goes to {@link dev.tally.spi.Store#applyOnce}.
   */
  public record Call(LimiterCall limiter, LimiterOperation operation, long permits, long now, String operationId,
      List<LimiterCall> joint) {
    /** A call on one key. */
    public Call(LimiterCall limiter, LimiterOperation operation, long permits, long now, String operationId) {
      this(limiter, operation, permits, now, operationId, null);
    }

    /** A joint decision ({@link dev.tally.spi.Store#limitAll}) of {@code permits} from each of {@code joint}. */
    static Call joint(List<LimiterCall> joint, long permits, long now) {
      return new Call(joint.get(0), LimiterOperation.ACQUIRE, permits, now, null, List.copyOf(joint));
    }

    /** The call as the mutation a store applies once per id. */
    public Mutation.LimiterStep step() {
      return new Mutation.LimiterStep(limiter, operation, permits);
    }

    @Override
    public String toString() {
      if (joint != null) {
        StringBuilder b = new StringBuilder("JOINT ").append(permits).append(" each of");
        for (LimiterCall c : joint) {
          b.append(' ').append(c.key()).append(' ').append(c.limits()).append(" version ").append(c.version()).append(';');
        }
        return b.append(" at ").append(now).toString();
      }
      return operation + " " + permits + " with " + limiter.limits() + " version " + limiter.version() + " at " + now
          + (operationId == null ? "" : " with operation id " + operationId);
    }
  }

  /**
   * A limiter's state as a store holds it: the words ({@code []} for a tombstone), the latest
   * instant decided at, and the expiry on the caller's clock, exact (null where the store does
   * not say).
   */
  public record Stored(long decidedAt, long[] words, BigInteger expiresAt) {
    @Override
    public boolean equals(Object o) {
      return o instanceof Stored s && s.decidedAt == decidedAt && Arrays.equals(s.words, words)
          && java.util.Objects.equals(s.expiresAt, expiresAt);
    }

    @Override
    public int hashCode() {
      return Long.hashCode(decidedAt) * 31 + Arrays.hashCode(words);
    }

    @Override
    public String toString() {
      return "Stored[at=" + decidedAt + ", " + Arrays.toString(words) + ", exp=" + expiresAt + "]";
    }
  }

  /**
   * What the machine answers to a call: a {@link Decision} (a list of them, in the calls' order,
   * for a joint decision), or the class of the exception it throws; and the state the store then
   * holds ({@code null}: none live), under the vector's key and, after a joint decision, under
   * each of its other keys ({@code others}, in the calls' order).
   */
  public record Expected(Object answer, Stored state, List<Stored> others) {
    /** After a call on the vector's key alone. */
    public Expected(Object answer, Stored state) {
      this(answer, state, List.of());
    }
  }

  /** One key's timeline: its calls and the machine's answers, in order. */
  public record Vector(long seed, String key, List<Call> calls, List<Expected> expected) {
    /** How many calls. */
    public int size() {
      return calls.size();
    }
  }

  /**
   * What a store keeps between calls, and so hands the machine on the next one: the same rule
   * ({@link LimiterRecord}: never decide before the latest instant decided at), kept to different
   * extents. The store's own Java code, not a port of the machine, does this.
   */
  public enum Keeping {
    /**
     * PostgreSQL: every call but a peek on nothing writes the machine's record with its
     * decision instant; a limiter full again leaves a tombstone that keeps the instant; words
     * past their expiry are gone, their instant is not.
     */
    POSTGRESQL,
    /**
     * Redis: the words and their instant are written when the words change; a limiter full
     * again is deleted, instant and all; words past their expiry count as none.
     */
    REDIS,
    /**
     * DynamoDB: the record and its instant are written by a call that changes something (not a
     * peek nor a refused or empty acquisition, unless it starts a warm-up), and by every first
     * call of an operation id (whose record the item holds); a limiter full again leaves a
     * tombstone that expires at once but keeps the instant; a reset deletes it.
     */
    DYNAMODB,
    /**
     * The file store: any record, expired or a tombstone, is the floor of the clock; a record
     * is rewritten when its words or expiry change; a limiter full again leaves a tombstone; a
     * reset deletes it.
     */
    FILE,
    /**
     * The memory store: every call on a live cell keeps its instant, past the words' expiry; a
     * limiter full again is removed, instant and all.
     */
    MEMORY;

    Keeper start() {
      return switch (this) {
        case POSTGRESQL -> new EveryCall();
        case REDIS -> new ChangedWords();
        case DYNAMODB -> new OnChange();
        case FILE -> new FileKeeper();
        case MEMORY -> new MemoryKeeper();
      };
    }
  }

  /** {@link #COUNT} vectors of {@link #LENGTH} calls from {@link #SEED}, keys starting with {@code prefix}. */
  public static List<Vector> generate(String prefix, Keeping keeping) {
    return generate(prefix, SEED, COUNT, LENGTH, keeping);
  }

  /** {@code count} vectors of {@code length} calls from {@code seed}, keys starting with {@code prefix}. */
  public static List<Vector> generate(String prefix, long seed, int count, int length, Keeping keeping) {
    SplittableRandom seeds = new SplittableRandom(seed);
    List<Vector> vectors = new ArrayList<>(count);
    for (int i = 0; i < count; i++) {
      vectors.add(vector(prefix, seeds.nextLong(), length, keeping));
    }
    return vectors;
  }

  /** One timeline from {@code seed}: the same calls for every store, given the same answers. */
  public static Vector vector(String prefix, long seed, int length, Keeping keeping) {
    SplittableRandom rnd = new SplittableRandom(seed);
    Instant start = STARTS.get(rnd.nextInt(STARTS.size()));
    long now = start.getEpochSecond() * NS + start.getNano() - rnd.nextInt(3);
    String key = prefix + Long.toHexString(seed);
    Timeline t = new Timeline(seed, key, keeping, length);
    if (rnd.nextInt(4) == 0) {
      warmUp(rnd, t, now, length);
    } else {
      mixed(rnd, t, now, length);
    }
    return t.vector();
  }

  /**
   * A timeline of every algorithm: handles of other limits and versions on the key, every
   * operation, permits near the edges, and a clock that favours them too.
   */
  private static void mixed(SplittableRandom rnd, Timeline t, long now, int length) {
    List<LimiterCall> handles = new ArrayList<>();
    handles.add(Internals.referenceLimiter(t.key, RandomTimelines.limits(rnd), RandomTimelines.version(rnd)));
    for (int step = 0; step < length; step++) {
      if (rnd.nextInt(6) == 0) {
        handles.add(Internals.referenceLimiter(t.key, RandomTimelines.limits(rnd), RandomTimelines.version(rnd)));
      }
      LimiterCall handle = handles.get(rnd.nextInt(handles.size()));
      LimiterOperation op = RandomTimelines.operation(rnd);
      long permits = op == LimiterOperation.CHARGE ? RandomTimelines.chargePermits(rnd, handle.limits())
          : RandomTimelines.permits(rnd, handle.limits());
      if (op == LimiterOperation.RECONFIGURE) {
        handle = Internals.referenceLimiter(t.key, RandomTimelines.limits(rnd), RandomTimelines.version(rnd));
        handles.add(handle);
      }
      t.call(rnd, handle, op, permits, now);
      now += Math.min(RandomTimelines.advance(rnd, t.last, now), Math.max(0, (1L << 62) - now));
    }
  }

  /**
   * A warm-up timeline: handles of one bucket with a warm-up, plain, or with another, and a clock
   * that moves by fractions of the interval and of the warm-up, to its end and past the instant
   * the limiter is cold again: cold starts, the ramp, idling back to cold, and reconfiguring the
   * warm-up on and off.
   */
  private static void warmUp(SplittableRandom rnd, Timeline t, long now, int length) {
    List<List<dev.tally.Limit>> variants = RandomTimelines.warmUpLimits(rnd);
    dev.tally.Limit warm = variants.get(0).get(0);
    List<LimiterCall> handles = new ArrayList<>();
    handles.add(Internals.referenceLimiter(t.key, variants.get(0), RandomTimelines.version(rnd)));
    for (int step = 0; step < length; step++) {
      LimiterOperation op;
      int x = rnd.nextInt(100);
      if (x < 57) {
        op = LimiterOperation.ACQUIRE;
      } else if (x < 69) {
        op = LimiterOperation.PEEK;
      } else if (x < 81) {
        op = LimiterOperation.REFUND;
      } else if (x < 92) {
        op = LimiterOperation.RECONFIGURE;
      } else if (x < 95) {
        op = LimiterOperation.RESET;
      } else {
        op = LimiterOperation.CHARGE; // at a cold or warming bucket's own cost
      }
      LimiterCall handle = handles.get(rnd.nextInt(handles.size()));
      if (op == LimiterOperation.RECONFIGURE || rnd.nextInt(10) == 0) {
        handle = Internals.referenceLimiter(t.key, variants.get(rnd.nextInt(variants.size())), RandomTimelines.version(rnd));
        handles.add(handle);
      }
      long permits = rnd.nextInt(3) == 0 ? RandomTimelines.permits(rnd, handle.limits()) : 1 + rnd.nextInt(3);
      t.call(rnd, handle, op, permits, now);
      now += RandomTimelines.warmUpAdvance(rnd, warm, t.last, now);
    }
  }

  /**
   * A vector being written: each call decided by the store's keeping alongside the machine, or,
   * for a call repeating an operation id, answered as {@link OperationRecord} says a repeat is
   * (the first decision as recorded; another operation under the id is a conflict), leaving the
   * state as it was. Ids are the vector's own, so vectors replayed at once never share one.
   */
  private static final class Timeline {
    private final long seed;
    private final String key;
    private final Keeping keeping;
    private final Keeper keeper;
    /** The handles on the other keys of joint decisions, and their keeping; drawn at the first. */
    private final List<LimiterCall> others = new ArrayList<>();
    private final List<Keeper> otherKeepers = new ArrayList<>();
    private final List<Call> calls;
    private final List<Expected> expected;
    /** Each id used so far: its first call, and the record of its answer (null: it threw, recording nothing). */
    private final Map<String, Once> ids = new LinkedHashMap<>();
    private final List<String> order = new ArrayList<>();
    private Decision last;

    private record Once(Call first, String record) {}

    Timeline(long seed, String key, Keeping keeping, int length) {
      this.seed = seed;
      this.key = key;
      this.keeping = keeping;
      this.keeper = keeping.start();
      this.calls = new ArrayList<>(length);
      this.expected = new ArrayList<>(length);
    }

    /**
     * Adds {@code op} of {@code permits} by {@code handle} at {@code now}: as drawn, or, now and
     * then, with an id of its own, or in its place a repeat of an earlier call's id.
     */
    void call(SplittableRandom rnd, LimiterCall handle, LimiterOperation op, long permits, long now) {
      if (rnd.nextInt(100) < JOINT) {
        joint(rnd, handle, now);
        return;
      }
      int x = rnd.nextInt(100);
      if (x < REPEATS && !order.isEmpty()) {
        // the latest id half the time (a retry right after its call), else any earlier one
        String id = order.get(rnd.nextBoolean() ? order.size() - 1 : rnd.nextInt(order.size()));
        Call first = ids.get(id).first();
        if (Math.abs(now - first.now()) < RETENTION_NANOS / 2) { // well inside every store's window
          // The id again for another operation: a conflict. Not for an id whose call threw: its
          // retry runs afresh, but reusing it for another operation is not asked of the stores.
          if (rnd.nextInt(4) == 0 && ids.get(id).record() != null) {
            step(new Call(handle, op, permits, now, id));
          } else {
            step(new Call(first.limiter(), first.operation(), first.permits(), now, id));
          }
          return;
        }
      }
      String id = x < REPEATS + WITH_ID && op != LimiterOperation.PEEK ? key + "#" + calls.size() : null;
      step(new Call(handle, op, permits, now, id));
    }

    private void step(Call c) {
      Once prior = c.operationId() == null ? null : ids.get(c.operationId());
      Object answer;
      if (prior != null && prior.record() != null) {
        try {
          answer = OperationRecord.decode(prior.record()).replay(OperationId.of(c.operationId()), c.step());
        } catch (RuntimeException e) {
          answer = e.getClass();
        }
      } else {
        try {
          answer = (c.operationId() == null ? keeper.decide(c.limiter(), c.operation(), c.permits(), c.now())
              : keeper.decideOnce(c.limiter(), c.operation(), c.permits(), c.now())).decision();
        } catch (RuntimeException e) {
          answer = e.getClass();
        }
        if (c.operationId() != null) {
          if (prior == null) {
            order.add(c.operationId());
          }
          ids.put(c.operationId(), new Once(c, answer instanceof Decision d ? OperationRecord.of(c.step(), d).encode() : null));
        }
      }
      calls.add(c);
      expected.add(new Expected(answer, keeper.state(c.now())));
      if (answer instanceof Decision d) {
        last = d;
      }
    }

    /**
     * A joint decision of {@code handle} and the handles of one or two other keys, of at least one
     * permit each, decided as {@link JointLimit} decides over what each store's joint path reads,
     * and kept as that path writes.
     */
    private void joint(SplittableRandom rnd, LimiterCall handle, long now) {
      while (others.size() < 2) {
        others.add(Internals.referenceLimiter(key + ":" + (others.size() + 1), RandomTimelines.limits(rnd),
            RandomTimelines.version(rnd)));
        otherKeepers.add(keeping.start());
      }
      int n = rnd.nextInt(3) == 0 ? 3 : 2;
      List<LimiterCall> joint = new ArrayList<>(n);
      List<Keeper> keepers = new ArrayList<>(n);
      joint.add(handle);
      keepers.add(keeper);
      for (int i = 0; i < n - 1; i++) {
        joint.add(others.get(i));
        keepers.add(otherKeepers.get(i));
      }
      long permits = rnd.nextInt(4) == 0 ? Math.max(1, RandomTimelines.permits(rnd, handle.limits())) : 1 + rnd.nextInt(3);
      LimiterRecord[] stored = new LimiterRecord[n];
      for (int i = 0; i < n; i++) {
        stored[i] = keepers.get(i).jointRecord(now);
      }
      Object answer;
      JointLimit.Result r = null;
      try {
        r = JointLimit.decide(joint, stored, now, permits);
        answer = List.of(r.decisions());
      } catch (RuntimeException e) {
        answer = e.getClass();
      }
      List<Stored> states = new ArrayList<>(n - 1);
      for (int i = 0; i < n; i++) {
        keepers.get(i).jointKeep(r == null ? null : r.outcomes()[i], r != null && r.allowed(), now);
        if (i > 0) {
          states.add(keepers.get(i).state(now));
        }
      }
      calls.add(Call.joint(joint, permits, now));
      expected.add(new Expected(answer, keeper.state(now), java.util.Collections.unmodifiableList(states)));
      if (r != null) {
        last = r.decisions()[0];
      }
    }

    Vector vector() {
      return new Vector(seed, key, List.copyOf(calls), List.copyOf(expected));
    }
  }

  /** A store's keeping, run alongside the machine; throws what the machine throws, keeping nothing then. */
  abstract static class Keeper {
    abstract LimiterOutcome decide(LimiterCall call, LimiterOperation op, long permits, long now);

    /** The state a reader finds after the last call, or null for none live at {@code now}. */
    abstract Stored state(long now);

    /** {@link #decide} for the first call of an operation id, which the store records with it. */
    LimiterOutcome decideOnce(LimiterCall call, LimiterOperation op, long permits, long now) {
      return decide(call, op, permits, now);
    }

    /** The record the store's joint decision reads for this key at {@code now} (null: none). */
    abstract LimiterRecord jointRecord(long now);

    /**
     * What the store keeps after a joint decision: {@code out} is this key's outcome, written if
     * {@code allowed} (every key allowed); null if the machine threw.
     */
    abstract void jointKeep(LimiterOutcome out, boolean allowed, long now);

    static BigInteger sum(long a, long b) {
      return BigInteger.valueOf(a).add(BigInteger.valueOf(b));
    }
  }

  /** {@link Keeping#POSTGRESQL}. */
  private static final class EveryCall extends Keeper {
    private LimiterRecord kept;
    private BigInteger expiry = BigInteger.ZERO;

    @Override
    LimiterOutcome decide(LimiterCall call, LimiterOperation op, long permits, long now) {
      LimiterOutcome out = call.apply(jointRecord(now), now, op, permits);
      if (!(out.record() == null && kept == null && op == LimiterOperation.PEEK)) { // such a peek writes nothing
        keep(out, now);
      }
      return out;
    }

    private void keep(LimiterOutcome out, long now) {
      kept = out.next();
      // keepNanos counts from the store's now; a tombstone expires at once
      expiry = out.record() == null ? BigInteger.valueOf(out.decidedAt()) : sum(now, out.keepNanos());
    }

    /** limit_all runs limit_step on each key, rolled back unless every one allowed. */
    @Override
    LimiterRecord jointRecord(long now) {
      if (kept == null) {
        return null;
      }
      boolean live = !kept.isTombstone()
          && expiry.compareTo(BigInteger.valueOf(Math.max(now, kept.decidedAt()))) > 0;
      return live ? new LimiterRecord(kept.decidedAt(), kept.words().clone()) : LimiterRecord.tombstone(kept.decidedAt());
    }

    @Override
    void jointKeep(LimiterOutcome out, boolean allowed, long now) {
      if (allowed) {
        keep(out, now);
      }
    }

    @Override
    Stored state(long now) {
      return kept == null ? null : new Stored(kept.decidedAt(), kept.isTombstone() ? new long[0] : kept.words().clone(),
          expiry.min(BigInteger.valueOf(Long.MAX_VALUE)));
    }
  }

  /** {@link Keeping#REDIS}. */
  private static final class ChangedWords extends Keeper {
    private long[] record;
    private long decidedAt = Long.MIN_VALUE;
    private long expiresAt;
    private BigInteger expiry = BigInteger.ZERO;

    @Override
    LimiterOutcome decide(LimiterCall call, LimiterOperation op, long permits, long now) {
      LimiterOutcome out = call.apply(jointRecord(now), now, op, permits);
      keep(out, now);
      return out;
    }

    private void keep(LimiterOutcome out, long now) {
      // limiter.lua compares the words with the hash's text, live or past its "exp"
      if (!Arrays.equals(out.record(), record)) {
        decidedAt = out.decidedAt();
      }
      record = out.record();
      expiresAt = now + out.keepNanos();
      expiry = sum(now, out.keepNanos());
    }

    /** The script's joint branch runs each key's step dry, and writes them only if every one allowed. */
    @Override
    LimiterRecord jointRecord(long now) {
      return record != null && expiresAt - now > 0 ? new LimiterRecord(decidedAt, record.clone()) : null;
    }

    @Override
    void jointKeep(LimiterOutcome out, boolean allowed, long now) {
      if (allowed) {
        keep(out, now);
      }
    }

    @Override
    Stored state(long now) {
      return record != null && expiresAt - now > 0 ? new Stored(decidedAt, record.clone(), expiry) : null;
    }
  }

  /** {@link Keeping#DYNAMODB}. */
  private static final class OnChange extends Keeper {
    private boolean present;
    private long lastNow;
    private long[] words;
    private long expiresAt;

    @Override
    LimiterOutcome decide(LimiterCall call, LimiterOperation op, long permits, long now) {
      if (op == LimiterOperation.RESET) {
        LimiterOutcome out = call.apply(null, now, op, permits);
        present = false;
        return out;
      }
      LimiterRecord stored = jointRecord(now);
      LimiterOutcome out = call.apply(stored, now, op, permits);
      boolean changes = switch (op) {
        case PEEK -> false;
        case ACQUIRE -> permits > 0 && out.decision().allowed();
        default -> true;
      } || LimiterRecord.startsWarmUp(stored == null ? null : stored.words(), out.record());
      if (changes) {
        keep(out);
      }
      return out;
    }

    /**
     * The id's record lives on the limiter's item, so the call writes the item whatever it
     * decided: a tombstone at its instant if there is no state to keep.
     */
    @Override
    LimiterOutcome decideOnce(LimiterCall call, LimiterOperation op, long permits, long now) {
      if (op == LimiterOperation.RESET) {
        return decide(call, op, permits, now); // the item keeps the id's record, and no state
      }
      LimiterOutcome out = call.apply(jointRecord(now), now, op, permits);
      present = true;
      keep(out);
      return out;
    }

    private void keep(LimiterOutcome out) {
      if (out.record() != null || present) {
        long at = out.decidedAt();
        long keep = Math.max(1, out.keepNanos());
        present = true;
        lastNow = at;
        words = out.record() == null ? new long[0] : out.record().clone();
        expiresAt = out.record() == null ? at : keep > Long.MAX_VALUE - at ? Long.MAX_VALUE : at + keep;
      }
    }

    /**
     * One snapshot of every item, decided as a single call reads it; written, every item as a
     * single changing call writes it, only if every key allowed (the vectors' joint decisions
     * take at least one permit, so each is a change).
     */
    @Override
    LimiterRecord jointRecord(long now) {
      return present
          ? new LimiterRecord(lastNow, expiresAt - Math.max(now, lastNow) > 0 ? words.clone() : new long[0]) : null;
    }

    @Override
    void jointKeep(LimiterOutcome out, boolean allowed, long now) {
      if (allowed) {
        keep(out);
      }
    }

    @Override
    Stored state(long now) {
      return present ? new Stored(lastNow, words.clone(), BigInteger.valueOf(expiresAt)) : null;
    }
  }

  /** {@link Keeping#FILE}. */
  private static final class FileKeeper extends Keeper {
    private boolean present;
    private long lastNow;
    private long[] words;
    private long expiresAt;
    private boolean jointLive;

    /**
     * Every slot locked, the records read at one clock reading: a live one as it is, an expired
     * one or a tombstone as its instant alone.
     */
    @Override
    LimiterRecord jointRecord(long now) {
      jointLive = false;
      if (!present) {
        return null;
      }
      long at = Math.max(now, lastNow);
      jointLive = !(expiresAt != 0 && at - expiresAt >= 0) && words.length > 0;
      return jointLive ? new LimiterRecord(lastNow, words.clone()) : LimiterRecord.tombstone(lastNow);
    }

    /** Written if every key allowed: decided at the outcome's instant, kept from the clock reading. */
    @Override
    void jointKeep(LimiterOutcome out, boolean allowed, long now) {
      if (!allowed) {
        return;
      }
      long[] next = out.record();
      long at = out.decidedAt();
      if (next == null) {
        if (jointLive) {
          present = true;
          lastNow = at;
          words = new long[0];
          expiresAt = at == 0 ? 1 : at;
        }
      } else {
        long exp = now + Math.max(1, out.keepNanos());
        if (!jointLive || exp != expiresAt || !Arrays.equals(next, words)) {
          present = true;
          lastNow = at;
          words = next.clone();
          expiresAt = exp == 0 ? 1 : exp;
        }
      }
    }

    @Override
    LimiterOutcome decide(LimiterCall call, LimiterOperation op, long permits, long now) {
      if (!present) {
        LimiterOutcome out = call.apply(null, now, op, permits);
        if (out.record() == null) {
          return out;
        }
      }
      LimiterRecord stored = null;
      if (present) {
        now = Math.max(now, lastNow);
        boolean expired = expiresAt != 0 && now - expiresAt >= 0;
        if (!expired && words.length > 0) {
          stored = new LimiterRecord(lastNow, words.clone());
        }
      }
      LimiterOutcome out = call.apply(stored, now, op, permits);
      long[] next = out.record();
      if (next == null) {
        if (op == LimiterOperation.RESET) {
          present = false;
        } else if (stored != null) {
          present = true;
          lastNow = now;
          words = new long[0];
          expiresAt = now == 0 ? 1 : now;
        }
      } else {
        long exp = now + Math.max(1, out.keepNanos());
        if (stored == null || exp != expiresAt || !Arrays.equals(next, words)) { // the machine wrote on its copy
          present = true;
          lastNow = now;
          words = next.clone();
          expiresAt = exp == 0 ? 1 : exp;
        }
      }
      return out;
    }

    @Override
    Stored state(long now) {
      return present ? new Stored(lastNow, words.clone(), BigInteger.valueOf(expiresAt)) : null;
    }
  }

  /**
   * {@link Keeping#MEMORY}: a single bucket (token, leaky, GCRA) not yet full lives in a cell of
   * its own that keeps its instant while it exists, full or not, and that calls with its own
   * limits decide on in place; anything else is a record that keeps its instant past its expiry.
   * Either is removed, instant and all, when the machine leaves no state.
   */
  private static final class MemoryKeeper extends Keeper {
    private long[] words; // null: no cell
    private boolean bucket;
    private long decidedAt;
    private long expiresAt;

    @Override
    LimiterOutcome decide(LimiterCall call, LimiterOperation op, long permits, long now) {
      if (words == null) {
        LimiterOutcome out = call.apply(null, now, op, permits);
        if (out.record() != null) {
          cell(out, now);
        }
        return out;
      }
      if (bucket) {
        now = Math.max(now, decidedAt);
        decidedAt = now;
        boolean full = words[3] - now <= 0;
        if ((op == LimiterOperation.ACQUIRE || op == LimiterOperation.PEEK || op == LimiterOperation.REFUND
            || op == LimiterOperation.CHARGE) && holds(call)) {
          LimiterOutcome out = call.apply(new LimiterRecord(now, words.clone()), now, op, permits);
          if (op == LimiterOperation.REFUND) { // the cell's own arithmetic: full is "full at now"
            words[3] = Math.max(now, words[3] - Math.min(permits, 2 * words[1]) * words[2]);
          } else if (out.record() != null) {
            words = out.record().clone();
          } else {
            words[3] = Math.min(words[3], now); // full: the bucket stays, full at the latest now
          }
          return out;
        }
        LimiterOutcome out = call.apply(full ? LimiterRecord.tombstone(now) : new LimiterRecord(now, words.clone()),
            now, op, permits);
        if (out.record() == null) {
          words = null;
        } else {
          cell(out, now);
        }
        return out;
      }
      LimiterRecord stored = new LimiterRecord(decidedAt, expiresAt - now <= 0 ? new long[0] : words.clone());
      LimiterOutcome out = call.apply(stored, now, op, permits);
      if (out.record() == null) {
        words = null;
      } else {
        words = out.record().clone();
        decidedAt = out.decidedAt();
        expiresAt = now + out.keepNanos();
      }
      return out;
    }

    /**
     * Every cell taken over in key order: a bucket's is replaced by a record cell of its state,
     * expiring when the bucket is full again, whatever the decision; each is read as a record.
     */
    @Override
    LimiterRecord jointRecord(long now) {
      if (words == null) {
        return null;
      }
      if (bucket) {
        bucket = false;
        expiresAt = words[3];
      }
      return new LimiterRecord(decidedAt, expiresAt - now <= 0 ? new long[0] : words.clone());
    }

    /** If every key allowed, each cell is replaced by its outcome's (or removed, full); else left as read. */
    @Override
    void jointKeep(LimiterOutcome out, boolean allowed, long now) {
      if (allowed) {
        if (out.record() == null) {
          words = null;
        } else {
          cell(out, now);
        }
      }
    }

    /** The cell a new state takes: a bucket for one bucket limit not yet full, else a record. */
    private void cell(LimiterOutcome out, long now) {
      long[] r = out.record();
      long kind = r[0] & 0xff;
      words = r.clone();
      decidedAt = out.decidedAt();
      bucket = r.length == LimiterRecord.WORDS_PER_LIMIT && kind >= 1 && kind <= 3 && out.decision().resetAfterNanos() > 0;
      expiresAt = now + out.keepNanos();
    }

    /** Whether the bucket holds the caller's one limit, at its version or a newer one. */
    private boolean holds(LimiterCall call) {
      if (call.limits().size() != 1) {
        return false;
      }
      dev.tally.Limit l = call.limits().get(0);
      return (words[0] & 0xff) == LimiterRecord.limitTag(l) && words[0] >>> LimiterRecord.VERSION_SHIFT >= call.version()
          && words[1] == l.limit() && words[2] == l.intervalNanos();
    }

    @Override
    Stored state(long now) {
      // a bucket's cell expires when it is full again; a record's, when the machine said
      return words == null ? null
          : new Stored(decidedAt, words.clone(), BigInteger.valueOf(bucket ? words[3] : expiresAt));
    }
  }
}
