package dev.tally.redis;

import dev.tally.Decision;
import dev.tally.spi.LimiterCall;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterArguments;
import dev.tally.spi.QuotaBoundaries;
import java.util.ArrayList;
import java.util.List;

/**
 * The arguments of one call of {@code limiter.lua}, and its reply as a {@link Decision}. The
 * script's header describes both; in short: {@code KEYS = [limiter key]},
 * {@code ARGV = [op, permits, clock, count, then tag p0 p1 zone per limit]}, in the SPI's
 * encoding of a limiter call ({@link LimiterArguments}).
 *
 * <p>Lua knows no time zones, so for each quota limit the caller sends the starts of four
 * consecutive days and of four consecutive months in the quota's zone around its own clock
 * (java.time, DST included); the script, deciding on the server's clock, takes the first one
 * after its now. Client and server clocks may thus disagree by up to a day before the script
 * refuses ({@code TALLY_CLOCK_SKEW}).
 */
final class LimiterScript {
  static final Script SCRIPT = Script.load("limiter.lua");

  private LimiterScript() {}

  /**
   * {@code ARGV} for one call.
   *
   * @param clientNow the client's time, for quota boundaries and, when {@code passClock}, as the
   *     time to decide at
   * @param passClock whether the script decides at {@code clientNow} (a supplied clock) rather
   *     than the server's {@code TIME}
   */
  static String[] args(LimiterCall call, LimiterOperation op, long permits, long clientNow, boolean passClock) {
    return args(call, op, permits, clientNow, passClock, clientNow);
  }

  /**
   * {@link #args} with quota boundaries around {@code boundariesAt} rather than the client's
   * time: the instant a {@link ClockSkewException} says the script decided at.
   */
  static String[] args(LimiterCall call, LimiterOperation op, long permits, long clientNow, boolean passClock,
      long boundariesAt) {
    long[] limits = LimiterArguments.limits(call);
    int n = call.limits().size();
    String[] args = new String[4 + 4 * n];
    args[0] = LimiterArguments.operation(op);
    args[1] = Long.toString(permits);
    args[2] = passClock ? Long.toString(clientNow) : "";
    args[3] = Integer.toString(n);
    for (int i = 0; i < n; i++) {
      int a = 4 + 4 * i;
      args[a] = Long.toString(limits[LimiterArguments.PER_LIMIT * i]);
      args[a + 1] = Long.toString(limits[LimiterArguments.PER_LIMIT * i + 1]);
      args[a + 2] = Long.toString(limits[LimiterArguments.PER_LIMIT * i + 2]);
      QuotaBoundaries starts = LimiterArguments.quotaStarts(call, i, boundariesAt);
      long warmUp = LimiterArguments.warmUpNanos(call, i);
      args[a + 3] = starts != null ? starts.text() : warmUp != 0 ? Long.toString(warmUp) : "";
    }
    return args;
  }

  /**
   * {@code args} with an operation id's four arguments appended (the script's header): the
   * call's fingerprint, the record's Redis expiry in milliseconds, and the caller's clock and
   * the record's lapse on it ({@code "-"} on the server's clock). The record key is
   * {@code KEYS[2]}.
   */
  static String[] once(String[] args, String fingerprint, long pexpireMillis, String now, String exp) {
    String[] all = java.util.Arrays.copyOf(args, args.length + 4);
    all[args.length] = fingerprint;
    all[args.length + 1] = Long.toString(pexpireMillis);
    all[args.length + 2] = now;
    all[args.length + 3] = exp;
    return all;
  }

  /**
   * {@code ARGV} for a batch: several acquisitions or peeks with the same limits, which the
   * script decides one after the other at one instant of the server's clock.
   */
  static String[] batchArgs(LimiterCall call, List<LimiterOperation> ops, List<Long> permits, long clientNow,
      boolean passClock) {
    return batchArgs(call, ops, permits, clientNow, passClock, clientNow);
  }

  /** {@link #batchArgs} with quota boundaries around {@code boundariesAt} (see {@link #args}). */
  static String[] batchArgs(LimiterCall call, List<LimiterOperation> ops, List<Long> permits, long clientNow,
      boolean passClock, long boundariesAt) {
    String[] args = args(call, LimiterOperation.PEEK, 0, clientNow, passClock, boundariesAt);
    StringBuilder list = new StringBuilder(ops.size() * 10);
    for (int i = 0; i < ops.size(); i++) {
      list.append(i == 0 ? "" : " ").append(LimiterArguments.operation(ops.get(i))).append(' ').append(permits.get(i));
    }
    args[0] = "batch";
    args[1] = list.toString();
    return args;
  }

  /**
   * {@code ARGV} for a joint decision ({@link dev.tally.spi.Store#limitAll}): {@code joint permits
   * clock keys}, then for each call, in the order of {@code KEYS}, its count of limits and four
   * words per limit as {@link #args} sends them.
   */
  static String[] jointArgs(List<LimiterCall> calls, long permits, long clientNow, boolean passClock,
      long boundariesAt) {
    List<String> all = new ArrayList<>();
    all.add("joint");
    all.add(Long.toString(permits));
    all.add(passClock ? Long.toString(clientNow) : "");
    all.add(Integer.toString(calls.size()));
    for (LimiterCall call : calls) {
      String[] one = args(call, LimiterOperation.ACQUIRE, permits, clientNow, passClock, boundariesAt);
      for (int i = 3; i < one.length; i++) { // from the count on
        all.add(one[i]);
      }
    }
    return all.toArray(new String[0]);
  }

  /**
   * The script's reply: allowed (1 or 0), remaining, limit, retryAfter, resetAfter, deciding
   * limit, then for a state of several limits their count and each one's remaining, limit and
   * resetAfter.
   */
  static Decision decision(List<Object> reply) {
    return decision(reply, new int[1]);
  }

  /** The decision of the {@code index}th operation of a batch's reply. */
  static Decision decision(List<Object> reply, int index) {
    return decisions(reply).get(index);
  }

  /** Every decision of a batch's reply, in order. */
  static List<Decision> decisions(List<Object> reply) {
    List<Decision> out = new ArrayList<>();
    for (int[] at = new int[1]; at[0] < reply.size(); ) {
      out.add(decision(reply, at));
    }
    return out;
  }

  /** The decision at {@code at[0]} of {@code reply}, moving {@code at[0]} past it. */
  private static Decision decision(List<Object> reply, int[] at) {
    int o = at[0];
    long[] perLimit = null;
    int next = o + 6;
    // What follows is the next decision's allowed (0 or 1) or this one's count of limits (2 or more).
    long n = reply.size() > next ? number(reply.get(next)) : 0;
    if (n > 1) {
      perLimit = new long[Math.multiplyExact(3, Math.toIntExact(n))];
      for (int i = 0; i < perLimit.length; i++) {
        perLimit[i] = number(reply.get(next + 1 + i));
      }
      next += 1 + perLimit.length;
    }
    at[0] = next;
    // The deciding limit, or from the general path with a mismatch after it: "0 a 2".
    Object deciding = reply.get(o + 5);
    String[] mismatch = deciding instanceof String s && s.indexOf(' ') > 0 ? s.split(" ", 3) : null;
    Decision d = new Decision(number(reply.get(o)) == 1, number(reply.get(o + 1)), number(reply.get(o + 2)),
        number(reply.get(o + 3)), number(reply.get(o + 4)),
        mismatch == null ? (int) number(deciding) : Integer.parseInt(mismatch[0]), perLimit);
    return mismatch == null ? d : d.withMismatch(mismatch(mismatch[1]), Long.parseLong(mismatch[2]));
  }

  /** The script's code of a mismatch: see its header. */
  private static Decision.Mismatch mismatch(String code) {
    return switch (code) {
      case "u" -> Decision.Mismatch.UPGRADED;
      case "a" -> Decision.Mismatch.ADOPTED;
      case "c" -> Decision.Mismatch.CONFLICT;
      default -> throw new IllegalStateException("limiter.lua answered an unknown mismatch " + code);
    };
  }

  /** A reply value: an integer from the script's fast path, a decimal string from the rest. */
  private static long number(Object value) {
    return value instanceof Long l ? l : Long.parseLong((String) value);
  }
}
