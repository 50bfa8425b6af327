package dev.tally.dynamodb;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * The items Tally keeps in its table, and how numbers are written to and read from them.
 *
 * <pre>
 * counter  { key: S, v: N (or S), _float: BOOL?, _exp: N?, _ttl: N? }
 * limiter  { key: S, rec: L of N, _fmt: N, _ver: N, _now: N, _exp: N, _ttl: N, _w: N }
 * either   may also hold operation id records: _op:ID, _or:ID, _ops (see Once)
 * </pre>
 *
 * <ul>
 *   <li>{@code key}: the partition key, named by the {@code key} option ({@code name} gives the
 *       leaky-bucket seed's table shape).
 *   <li>{@code v}: the value. Integers are signed 64-bit numbers. Floating counters carry
 *       {@code _float = true}; their value is a number when DynamoDB can hold it (magnitude
 *       1e-130 to 1e126) and otherwise a string with Java's exact round-trip text
 *       ({@link Double#toString}), which the store updates by a conditional read-modify-write.
 *   <li>{@code _exp}: when the counter or limiter state expires, in epoch nanoseconds of the
 *       client clock: exact, and checked on every read and in every condition.
 *   <li>{@code _ttl}: the same instant in epoch seconds, rounded up, for DynamoDB's TTL deletion,
 *       which only cleans up (it may lag by days).
 *   <li>{@code rec}: a limiter's state machine record; {@code _w} is a random id of the write
 *       that produced it, which the next write's condition compares (and which recognises a
 *       write retried after a lost response); {@code _ver} counts the writes, for people;
 *       {@code _now} is the latest time a decision was taken at, so stored time never moves
 *       backwards; {@code _fmt} is the {@link dev.tally.spi.LimiterRecord#VERSION} of {@code rec}
 *       (absent in items written before it was stored: format 1).
 * </ul>
 *
 * Every expression refers to attributes through aliases ({@code #k}, {@code #v}, ...), so any
 * key attribute name works, including DynamoDB reserved words such as {@code name}.
 */
final class Items {
  static final String DEFAULT_KEY = "key";

  static final String VALUE = "v";
  static final String FLOAT = "_float";
  static final String EXP = "_exp";
  static final String TTL = "_ttl";
  static final String REC = "rec";
  static final String VER = "_ver";
  static final String NOW = "_now";
  static final String WRITER = "_w";
  static final String FORMAT = "_fmt";

  /** Attribute names Tally uses besides the key. */
  static final Set<String> RESERVED = Set.of(VALUE, FLOAT, EXP, TTL, REC, VER, NOW, WRITER, FORMAT);

  /** DynamoDB's item size limit. */
  static final int MAX_ITEM_BYTES = 400 * 1024;

  /** DynamoDB numbers have magnitudes from 1e-130 up to, not including, 1e126. */
  private static final double NUMBER_LIMIT = 1e126;
  private static final double MIN_NUMBER = 1e-130;

  private static final AttributeValue TRUE = AttributeValue.fromBool(true);
  private static final Pattern ALIAS = Pattern.compile("#[a-z]");

  final String keyAttribute;
  private final Map<String, String> aliases;

  Items(String keyAttribute) {
    checkKeyAttribute(keyAttribute);
    this.keyAttribute = keyAttribute;
    Map<String, String> a = new HashMap<>();
    a.put("#k", keyAttribute);
    a.put("#v", VALUE);
    a.put("#f", FLOAT);
    a.put("#e", EXP);
    a.put("#t", TTL);
    a.put("#r", REC);
    a.put("#n", VER);
    a.put("#o", NOW);
    a.put("#w", WRITER);
    a.put("#m", FORMAT);
    this.aliases = Map.copyOf(a);
  }

  static void checkKeyAttribute(String name) {
    if (name == null || name.isEmpty() || name.getBytes(StandardCharsets.UTF_8).length > 255) {
      throw new IllegalArgumentException("the key attribute name must be 1 to 255 bytes, e.g. key=key");
    }
    if (RESERVED.contains(name) || Once.isRecordAttr(name)) {
      throw new IllegalArgumentException("the key attribute cannot be named '" + name + "': Tally"
          + " stores its own attributes " + new TreeSet<>(RESERVED) + " (and operation ids as "
          + Once.RECORD_PREFIX + "…, " + Once.RESULT_PREFIX + "… and " + Once.MARKER + ") in each item");
    }
  }

  /** The primary key of {@code key}'s item. */
  Map<String, AttributeValue> key(String key) {
    return Map.of(keyAttribute, AttributeValue.fromS(key));
  }

  /** The aliases the expressions use, as ExpressionAttributeNames (only the used ones). */
  Map<String, String> names(String... expressions) {
    Map<String, String> used = new LinkedHashMap<>();
    for (String e : expressions) {
      if (e == null) {
        continue;
      }
      Matcher m = ALIAS.matcher(e);
      while (m.find()) {
        String alias = m.group();
        String name = aliases.get(alias);
        if (name == null) {
          throw new IllegalStateException("unknown alias " + alias + " in " + e);
        }
        used.put(alias, name);
      }
    }
    return used;
  }

  // ------------------------------------------------------------------ numbers

  static AttributeValue n(long v) {
    return AttributeValue.fromN(Long.toString(v));
  }

  static AttributeValue bool() {
    return TRUE;
  }

  /** Whether DynamoDB's number type holds {@code d} exactly as Java prints it. */
  static boolean fitsNumber(double d) {
    if (d == 0) {
      return Double.doubleToRawLongBits(d) == 0; // -0.0 has no DynamoDB number
    }
    double a = Math.abs(d);
    return a >= MIN_NUMBER && a < NUMBER_LIMIT;
  }

  /** A double as a DynamoDB number when it fits, else as its exact Java text. */
  static AttributeValue encodeDouble(double d) {
    return fitsNumber(d) ? AttributeValue.fromN(decimal(d)) : AttributeValue.fromS(Double.toString(d));
  }

  /** The shortest decimal that reads back as {@code d}; at most 17 significant digits. */
  static String decimal(double d) {
    return new BigDecimal(Double.toString(d)).stripTrailingZeros().toString();
  }

  /** A counter value as stored: Long or Double. */
  static AttributeValue encode(Number value) {
    return value instanceof Double d ? encodeDouble(d) : n(value.longValue());
  }

  /** The value of a counter item, {@code Long} or {@code Double}; null if it has none. */
  static Number value(Map<String, AttributeValue> item) {
    AttributeValue v = item.get(VALUE);
    if (v == null) {
      return null;
    }
    boolean floating = item.containsKey(FLOAT);
    if (v.s() != null) {
      return Double.parseDouble(v.s());
    }
    String n = v.n();
    if (n == null) {
      throw new IllegalStateException("attribute v of a counter is neither a number nor a string: " + v);
    }
    if (floating) {
      return new BigDecimal(n).doubleValue();
    }
    try {
      return Long.parseLong(n);
    } catch (NumberFormatException e) {
      return new BigDecimal(n).longValueExact(); // e.g. "1E+3" written by another tool
    }
  }

  /** A DynamoDB number as a long. */
  static long integer(String n) {
    try {
      return Long.parseLong(n);
    } catch (NumberFormatException e) {
      return new BigDecimal(n).longValueExact(); // e.g. "1E+3" written by another tool
    }
  }

  /** A number attribute as a long, or {@code dflt} when absent. */
  static long longAttr(Map<String, AttributeValue> item, String name, long dflt) {
    AttributeValue v = item.get(name);
    if (v == null || v.n() == null) {
      return dflt;
    }
    return new BigDecimal(v.n()).longValueExact();
  }

  /** The expiry of an item in epoch nanos, 0 for none. */
  static long expiresAt(Map<String, AttributeValue> item) {
    return longAttr(item, EXP, 0);
  }

  static boolean expired(Map<String, AttributeValue> item, long now) {
    long exp = expiresAt(item);
    return exp != 0 && now - exp >= 0;
  }

  /** Whether the item holds a counter (as opposed to limiter state). */
  static boolean isCounter(Map<String, AttributeValue> item) {
    return item.containsKey(VALUE);
  }

  static boolean isLimiter(Map<String, AttributeValue> item) {
    return !item.containsKey(VALUE) && item.containsKey(REC);
  }

  /**
   * Whether the item holds neither a counter nor limiter state, only operation id records: a
   * counter deleted while ids were live on it. It reads as missing.
   */
  static boolean recordsOnly(Map<String, AttributeValue> item) {
    return !item.containsKey(VALUE) && !item.containsKey(REC);
  }

  /** The live counter value of an item, or null when the item is missing, expired or not a counter. */
  static Number liveValue(Map<String, AttributeValue> item, long now) {
    if (item == null || item.isEmpty() || !isCounter(item) || expired(item, now)) {
      return null;
    }
    return value(item);
  }

  /** The absolute expiry for a ttl in nanos from now; 0 for {@code ttlNanos == 0}. */
  static long expiry(long now, long ttlNanos) {
    if (ttlNanos == 0) {
      return 0;
    }
    long at = now + ttlNanos;
    return at == 0 ? 1 : at;
  }

  /** DynamoDB's TTL attribute for an expiry: epoch seconds, rounded up so it never comes early. */
  static AttributeValue ttlSeconds(long expNanos) {
    return n(Math.floorDiv(expNanos, 1_000_000_000L) + (Math.floorMod(expNanos, 1_000_000_000L) == 0 ? 0 : 1));
  }

  /** A counter item. */
  Map<String, AttributeValue> counter(String key, Number value, long expiresAt) {
    Map<String, AttributeValue> item = new HashMap<>();
    item.put(keyAttribute, AttributeValue.fromS(key));
    item.put(VALUE, encode(value));
    if (value instanceof Double) {
      item.put(FLOAT, TRUE);
    }
    if (expiresAt != 0) {
      item.put(EXP, n(expiresAt));
      item.put(TTL, ttlSeconds(expiresAt));
    }
    return item;
  }

  /** The record of a limiter item. */
  static long[] record(Map<String, AttributeValue> item) {
    AttributeValue rec = item.get(REC);
    if (rec == null || !rec.hasL()) {
      return null;
    }
    List<AttributeValue> l = rec.l();
    long[] r = new long[l.size()];
    for (int i = 0; i < r.length; i++) {
      r[i] = Long.parseLong(l.get(i).n());
    }
    return r;
  }

  static AttributeValue record(long[] r) {
    AttributeValue[] l = new AttributeValue[r.length];
    for (int i = 0; i < r.length; i++) {
      l[i] = n(r[i]);
    }
    return AttributeValue.fromL(List.of(l));
  }

  /**
   * An upper bound of an item's size as DynamoDB counts it (attribute names plus values; a number
   * takes at most 21 bytes, a list 3 bytes plus 1 per element).
   */
  static int sizeBound(Map<String, AttributeValue> item) {
    int size = 0;
    for (Map.Entry<String, AttributeValue> e : item.entrySet()) {
      size += e.getKey().getBytes(StandardCharsets.UTF_8).length + sizeBound(e.getValue());
    }
    return size;
  }

  private static int sizeBound(AttributeValue v) {
    if (v.s() != null) {
      return v.s().getBytes(StandardCharsets.UTF_8).length;
    }
    if (v.n() != null) {
      return 21;
    }
    if (v.bool() != null) {
      return 1;
    }
    if (v.hasL()) {
      int size = 3;
      for (AttributeValue e : v.l()) {
        size += 1 + sizeBound(e);
      }
      return size;
    }
    return 64;
  }
}
