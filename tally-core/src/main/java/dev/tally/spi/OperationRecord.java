package dev.tally.spi;

import dev.tally.Decision;
import dev.tally.OperationIdConflictException;
import java.util.ArrayList;
import java.util.List;

/**
 * What a store keeps for an {@link OperationId}: the fingerprint of the operation that first
 * carried it and that operation's result, both in one short text so any store can hold it (a
 * Redis string, a DynamoDB attribute, a file record).
 *
 * <pre>
 *   text   = fingerprint "|" result          fingerprint: 16 lower-case hex digits
 *   result = "N"                              null (a put; a pop of nothing)
 *          | "L" long | "D" double            a counter value (Double.toString: exact)
 *          | "T" | "F"                        a boolean
 *          | "[" result ("," result)* "]"     a transaction's results
 *          | "Q" allowed "," remaining "," limit "," retryAfterNanos "," resetAfterNanos "," limitIndex
 *              ("," count ("," remaining "," limit "," resetAfterNanos){count})?
 * </pre>
 *
 * <p>Redis' script may follow a decision's limitIndex with the mismatch of its limits
 * ({@code "0 a 2"}, {@link Decision#mismatch()}); it is read and dropped: a repeat decided
 * nothing, so it has no mismatch to report.
 *
 * <p>A decision of several limits carries each one's state ({@link Decision#limits()}) after its
 * own six fields: their count, then three values per limit; one of a single limit stays six
 * fields, as records written before the per-limit state were.
 *
 * <p>Redis' script writes and reads this format too (see tally-redis), so it is part of the
 * contract: a change to it is a new record version, read by both.
 *
 * @param fingerprint {@link Mutation#fingerprint()} of the first operation
 * @param result the first operation's result, as {@link Mutation} documents per kind
 */
public record OperationRecord(long fingerprint, Object result) {

  /** The record of {@code mutation} having returned {@code result}. */
  public static OperationRecord of(Mutation mutation, Object result) {
    return new OperationRecord(mutation.fingerprint(), result);
  }

  /**
   * The result to return for a repeat of {@code id} carrying {@code mutation}.
   *
   * @throws OperationIdConflictException if the id was first used for another operation
   */
  public Object replay(OperationId id, Mutation mutation) {
    if (mutation.fingerprint() != fingerprint) {
      throw new OperationIdConflictException(id.value(), mutation.key());
    }
    return result;
  }

  /** This record as text. */
  public String encode() {
    StringBuilder b = new StringBuilder(32);
    String hex = Long.toHexString(fingerprint);
    b.append("0".repeat(16 - hex.length())).append(hex).append('|');
    append(b, result);
    return b.toString();
  }

  /**
   * Reads a record written by {@link #encode()}.
   *
   * @throws IllegalStateException naming the text if it is not such a record
   */
  public static OperationRecord decode(String text) {
    try {
      if (text.length() < 18 || text.charAt(16) != '|') {
        throw new IllegalArgumentException("no fingerprint");
      }
      long fp = Long.parseUnsignedLong(text.substring(0, 16), 16);
      int[] at = {17};
      Object result = parse(text, at);
      if (at[0] != text.length()) {
        throw new IllegalArgumentException("trailing characters");
      }
      return new OperationRecord(fp, result);
    } catch (RuntimeException e) {
      throw new IllegalStateException("operation record '" + (text.length() > 80 ? text.substring(0, 77)
          + "..." : text) + "' was not written by this version of Tally (" + e.getMessage() + ")", e);
    }
  }

  private static void append(StringBuilder b, Object r) {
    if (r == null) {
      b.append('N');
    } else if (r instanceof Long l) {
      b.append('L').append(l.longValue());
    } else if (r instanceof Double d) {
      b.append('D').append(d.doubleValue());
    } else if (r instanceof Boolean t) {
      b.append(t ? 'T' : 'F');
    } else if (r instanceof Number[] rs) {
      b.append('[');
      for (int i = 0; i < rs.length; i++) {
        if (i > 0) {
          b.append(',');
        }
        append(b, rs[i]);
      }
      b.append(']');
    } else if (r instanceof Decision d) {
      b.append('Q').append(d.allowed() ? 1 : 0).append(',').append(d.remaining()).append(',')
          .append(d.limit()).append(',').append(d.retryAfterNanos()).append(',')
          .append(d.resetAfterNanos()).append(',').append(d.limitIndex());
      List<Decision.LimitState> limits = d.limits();
      if (limits.size() > 1) {
        b.append(',').append(limits.size());
        for (Decision.LimitState l : limits) {
          b.append(',').append(l.remaining()).append(',').append(l.limit()).append(',').append(l.resetAfterNanos());
        }
      }
    } else {
      throw new IllegalArgumentException("no record form for a result of type " + r.getClass().getName());
    }
  }

  private static Object parse(String s, int[] at) {
    char c = s.charAt(at[0]++);
    switch (c) {
      case 'N':
        return null;
      case 'T':
        return true;
      case 'F':
        return false;
      case 'L':
        return Long.parseLong(token(s, at));
      case 'D':
        return Double.parseDouble(token(s, at));
      case 'Q': {
        // A decision is always a whole result, never an element: its fields run to the end.
        String[] f = s.substring(at[0]).split(",", -1);
        at[0] = s.length();
        long[] perLimit = null;
        if (f.length > 6) {
          int count = Integer.parseInt(f[6]);
          if (count < 2 || f.length != 7 + 3L * count) {
            throw new IllegalArgumentException("a decision of " + f[6] + " limits has " + f.length
                + " fields, not 7 + 3 per limit");
          }
          perLimit = new long[3 * count];
          for (int i = 0; i < perLimit.length; i++) {
            perLimit[i] = Long.parseLong(f[7 + i]);
          }
        } else if (f.length != 6) {
          throw new IllegalArgumentException("a decision has 6 fields, not " + f.length);
        }
        return new Decision(f[0].equals("1"), Long.parseLong(f[1]), Long.parseLong(f[2]),
            Long.parseLong(f[3]), Long.parseLong(f[4]), limitIndex(f[5]), perLimit);
      }
      case '[': {
        List<Number> out = new ArrayList<>();
        if (s.charAt(at[0]) == ']') {
          at[0]++;
          return new Number[0];
        }
        for (;;) {
          Object o = parse(s, at);
          if (o != null && !(o instanceof Number)) {
            throw new IllegalArgumentException("a transaction result holds a non-number");
          }
          out.add((Number) o);
          char sep = s.charAt(at[0]++);
          if (sep == ']') {
            return out.toArray(new Number[0]);
          }
          if (sep != ',') {
            throw new IllegalArgumentException("expected ',' or ']' at " + (at[0] - 1));
          }
        }
      }
      default:
        throw new IllegalArgumentException("unknown result tag '" + c + "'");
    }
  }

  /** Characters up to the next ',' or ']' (or the end). */
  private static String token(String s, int[] at) {
    int start = at[0];
    int i = start;
    while (i < s.length() && s.charAt(i) != ',' && s.charAt(i) != ']') {
      i++;
    }
    at[0] = i;
    return s.substring(start, i);
  }

  /** A decision's limitIndex field, without the mismatch Redis' script may write after it. */
  private static int limitIndex(String field) {
    int space = field.indexOf(' ');
    return Integer.parseInt(space < 0 ? field : field.substring(0, space));
  }
}
