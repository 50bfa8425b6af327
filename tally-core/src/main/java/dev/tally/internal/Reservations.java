package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.OperationIdConflictException;
import dev.tally.Reservation;
import dev.tally.ReservationGoneException;
import dev.tally.ReservationHandle;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.Mutation;
import dev.tally.spi.OperationId;
import dev.tally.spi.Store;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Reservations, composed of the operations every store has, so that every store agrees on them
 * without a store operation of their own.
 *
 * <p><b>Reserve.</b> One limiter step takes the estimate ({@code ACQUIRE}); if granted, a
 * counter of the reservation, its <em>hold</em>, is added with the estimate as its value and the
 * reservation's ttl as its expiry. A reservation named by the caller (a handle
 * {@code withOperationId(id)}) takes the two steps under the operation ids {@code <id>:reserve}
 * and {@code <id>:hold}, so that a retry takes once; a random id needs none, as no caller can
 * retry by an id it never received. The hold's expiry is the store's, on the store's clock where it has one.
 * The estimate is taken first: a crash between the two leaves the estimate taken and no hold,
 * which is exactly what an abandoned reservation comes to (settled at its estimate), and a
 * refusal costs one step and leaves nothing to clean up. Taking the hold first would leave, after
 * a crash, a hold with nothing taken, which a settlement by id would then refund.
 *
 * <p><b>Settle.</b> The hold is popped (read and deleted in one step) under {@code <id>:close}:
 * it returns the estimate, or nothing if the reservation was closed already or has expired, and
 * then nothing changes. Then one limiter step under {@code <id>:settle} gives back
 * {@code estimate - actual} ({@code REFUND}) or takes {@code actual - estimate} ({@code CHARGE});
 * an exact estimate records {@code REFUND 0}, so that the id is recorded either way. A settlement
 * retried after a lost reply replays both steps' results; a different settlement of the same id
 * replays the pop but conflicts on the limiter step, and is refused having changed nothing. If
 * the pop succeeds and the limiter step fails and is never retried, the estimate stays taken: the
 * rule of an expired reservation.
 *
 * <p><b>Why the ttl may not exceed the operation-id retention.</b> Each step's id is remembered
 * for the retention, from when it was applied. A ttl within it means the reserve's ids outlive
 * the hold, so a reserve retried while its reservation can still be open replays rather than
 * taking again.
 *
 * <p>The hold's key is {@code tally:hold:<hash of the limiter's key>:<id>}: in Tally's own
 * {@code tally:} namespace, like the other keys Tally writes, and naming the limiter, so that an
 * id can only be settled on the limiter that reserved it.
 */
final class Reservations {
  /** The longest reservation id: an operation id (128) less the longest step suffix. */
  static final int MAX_ID_LENGTH = 120;
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Store store;
  private final LimiterMachine machine;
  private final long retentionNanos;

  Reservations(Store store, LimiterMachine machine, Duration retention) {
    this.store = store;
    this.machine = machine;
    this.retentionNanos = retention.toNanos();
  }

  /** Reserves {@code estimate} for {@code ttl} under {@code id}, or under a new random id when null. */
  Reservation reserve(String id, long estimate, Duration ttl) {
    if (estimate < 1) {
      throw new IllegalArgumentException("a reservation's estimate must be 1 or more, not " + estimate
          + ": one of nothing would be granted even by an empty limiter. Estimate the cost; the"
          + " settlement corrects it");
    }
    long ttlNanos = ttl(ttl);
    Decision d;
    String rid;
    if (id == null) {
      // A random id reaches the caller only with the answer, so nobody can retry this reserve by
      // its id: its steps need no records (two fewer per reservation, kept for the retention).
      rid = newId();
      d = store.limit(machine, LimiterOperation.ACQUIRE, estimate);
      if (d.allowed()) {
        store.add(holdKey(rid), estimate, ttlNanos);
      }
    } else {
      rid = checkId(id);
      d = (Decision) store.applyOnce(step(rid, "reserve"),
          new Mutation.LimiterStep(machine, LimiterOperation.ACQUIRE, estimate));
      if (d.allowed()) {
        store.applyOnce(step(rid, "hold"), new Mutation.Add(holdKey(rid), estimate, ttlNanos));
      }
    }
    machine.report(d);
    return new Held(rid, estimate, d);
  }

  /** A handle on reservation {@code id}, reading nothing. */
  ReservationHandle handle(String id) {
    String rid = checkId(id);
    return new ReservationHandle() {
      @Override
      public String id() {
        return rid;
      }

      @Override
      public String limiterName() {
        return machine.key();
      }

      @Override
      public Decision settle(long actual) {
        return Reservations.this.settle(rid, actual);
      }

      @Override
      public String toString() {
        return "Reservation[" + rid + " of " + machine.key() + "]";
      }
    };
  }

  Decision settle(String id, long actual) {
    if (actual < 0) {
      throw new IllegalArgumentException("a reservation's actual cost must be zero or more, not " + actual
          + "; cancel() gives the whole estimate back");
    }
    Number held = (Number) store.applyOnce(step(id, "close"), new Mutation.Pop(holdKey(id), true));
    if (held == null) {
      throw new ReservationGoneException(id, machine.key(),
          "was settled, cancelled, or expired after its ttl (and was settled at its estimate)");
    }
    long estimate = held.longValue();
    LimiterOperation op = actual > estimate ? LimiterOperation.CHARGE : LimiterOperation.REFUND;
    long permits = actual > estimate ? actual - estimate : estimate - actual;
    Decision d;
    try {
      d = (Decision) store.applyOnce(step(id, "settle"), new Mutation.LimiterStep(machine, op, permits));
    } catch (OperationIdConflictException e) {
      throw new ReservationGoneException(id, machine.key(), "was already settled at another amount, or"
          + " cancelled", e);
    }
    machine.report(d);
    return d;
  }

  /** The key of reservation {@code id}'s hold. */
  String holdKey(String id) {
    // FNV-1a over the key's UTF-16 units: the same in every process and version, and short
    // whatever the key's length, so the hold's key fits every store's key size.
    long h = 0xcbf29ce484222325L;
    String key = machine.key();
    for (int i = 0; i < key.length(); i++) {
      h = (h ^ key.charAt(i)) * 0x100000001b3L;
    }
    String hex = Long.toHexString(h);
    return "tally:hold:" + "0".repeat(16 - hex.length()) + hex + ":" + id;
  }

  private static OperationId step(String id, String step) {
    return OperationId.of(id + ":" + step);
  }

  private long ttl(Duration ttl) {
    Objects.requireNonNull(ttl, "ttl");
    if (ttl.isNegative() || ttl.isZero()) {
      throw new IllegalArgumentException("a reservation's ttl must be positive, not " + ttl);
    }
    if (ttl.toNanos() > retentionNanos) {
      throw new IllegalArgumentException("a reservation's ttl (" + ttl + ") must not exceed the store's"
          + " operation-id retention (" + Duration.ofNanos(retentionNanos) + "): the store remembers a"
          + " reservation's steps for that long, so that a retried reserve or settlement applies once"
          + " while the reservation is open. Raise Tally.Builder.operationRetention, or settle sooner");
    }
    return ttl.toNanos();
  }

  private static String newId() {
    byte[] b = new byte[16];
    RANDOM.nextBytes(b);
    return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
  }

  /**
   * Checks a reservation id: letters, digits and {@code - _ . :}, which every store takes in a key
   * (no braces, which would change where Redis Cluster places the hold).
   */
  static String checkId(String id) {
    if (id == null || id.isEmpty() || id.length() > MAX_ID_LENGTH) {
      throw new IllegalArgumentException("a reservation id is 1 to " + MAX_ID_LENGTH + " characters, not "
          + (id == null ? "null" : id.length() + " ('" + Checks.abbreviate(id) + "')"));
    }
    for (int i = 0; i < id.length(); i++) {
      char c = id.charAt(i);
      boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
          || c == '-' || c == '_' || c == '.' || c == ':';
      if (!ok) {
        throw new IllegalArgumentException("reservation id '" + Checks.abbreviate(id) + "' has '" + c
            + "' at index " + i + "; a reservation id has letters, digits and - _ . : only (a UUID"
            + " or a request id)");
      }
    }
    return id;
  }

  /** The reservation a reserve returns: refuses a second closing without asking the store. */
  private final class Held implements Reservation {
    private final String id;
    private final long estimate;
    private final Decision decision;
    private final AtomicBoolean closed = new AtomicBoolean();

    Held(String id, long estimate, Decision decision) {
      this.id = id;
      this.estimate = estimate;
      this.decision = decision;
    }

    @Override
    public String id() {
      return id;
    }

    @Override
    public String limiterName() {
      return machine.key();
    }

    @Override
    public Decision decision() {
      return decision;
    }

    @Override
    public long estimate() {
      return estimate;
    }

    @Override
    public Decision settle(long actual) {
      if (!decision.allowed()) {
        throw new IllegalStateException("reservation '" + id + "' of limiter '" + machine.key()
            + "' was refused and holds nothing to settle or cancel");
      }
      if (closed.get()) {
        throw new ReservationGoneException(id, machine.key(), "was already settled or cancelled through"
            + " this handle");
      }
      // Marked only once the store has answered, so a settlement that failed may be retried here.
      Decision d = Reservations.this.settle(id, actual);
      closed.set(true);
      return d;
    }

    @Override
    public String toString() {
      return "Reservation[" + id + " of " + machine.key() + ", " + estimate
          + (decision.allowed() ? " held" : " refused") + "]";
    }
  }
}
