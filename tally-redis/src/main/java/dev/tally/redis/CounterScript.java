package dev.tally.redis;

import dev.tally.Bounds;
import dev.tally.spi.TxOp;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The arguments of one call of {@code counters.lua}: the distinct keys in order of first use
 * ({@code KEYS}) and four strings per operation ({@code ARGV}), as that script's header
 * describes. Results come back one per operation, in order.
 */
final class CounterScript {
  static final Script SCRIPT = Script.load("counters.lua");

  private final Map<String, Integer> keyIndex = new LinkedHashMap<>();
  private final List<String> args = new ArrayList<>();

  /** Integer increment; {@code create == false}: the key must exist. */
  CounterScript incr(String key, long delta, long dflt, boolean create) {
    String ifMissing;
    if (!create) {
      ifMissing = "";
    } else {
      long sum = dflt + delta;
      ifMissing = ((dflt ^ sum) & (delta ^ sum)) < 0 ? "!" + dflt : Long.toString(sum);
    }
    return op("incr", key, Long.toString(delta), ifMissing);
  }

  /** Bounded increment ({@code CounterMath.addWithin}); {@code create == false}: the key must exist. */
  CounterScript incrWithin(String key, long delta, long dflt, boolean create, Bounds bounds) {
    return op("incrb", key, Long.toString(delta), (create ? Long.toString(dflt) : "-") + " "
        + bounds.min() + " " + bounds.max() + " " + (bounds.saturates() ? "s" : "r"));
  }

  CounterScript incrDouble(String key, double delta, double dflt) {
    return op("incrf", key, Double.toString(delta), Double.toString(dflt));
  }

  CounterScript put(String key, Number value, long ttlNanos) {
    return op("put", key, CounterValues.encode(value), ttlNanos == 0 ? "" : Long.toString(millis(ttlNanos)));
  }

  CounterScript delete(String key) {
    return op("del", key, "", "");
  }

  CounterScript get(String key) {
    return op("get", key, "", "");
  }

  /** Get and delete, refusing (and keeping) a floating counter. */
  CounterScript popInteger(String key) {
    return op("popi", key, "", "");
  }

  /** Get and delete an integer or floating counter, refusing (and keeping) any other value. */
  CounterScript pop(String key) {
    return op("pop", key, "", "");
  }

  /** Set only if missing: result "1" if it did. */
  CounterScript add(String key, Number value, long ttlNanos) {
    return op("add", key, CounterValues.encode(value), ttlNanos == 0 ? "" : Long.toString(millis(ttlNanos)));
  }

  /** The key's expiry as {@code PTTL} gives it (-2 missing, -1 none, else milliseconds), refusing a non-counter. */
  CounterScript ttl(String key) {
    return op("ttl", key, "", "");
  }

  /** A live key's new expiry ({@code 0}: none): result "1" if it was live. */
  CounterScript touch(String key, long ttlNanos) {
    return op("touch", key, ttlNanos == 0 ? "" : Long.toString(millis(ttlNanos)), "");
  }

  /**
   * Makes this call idempotent under an operation id: must come first. {@code record} is the
   * id's record key ({@link OperationKeys}), {@code shape} how the results read as the one
   * result the record keeps (value, none, bool, list: see the script's header), {@code pexpire}
   * the record's Redis expiry in milliseconds, {@code now} and {@code exp} the caller's clock and
   * the record's logical expiry on it, or null on the server's clock.
   */
  CounterScript once(String record, long fingerprint, String shape, long pexpire, String now, String exp) {
    if (!args.isEmpty()) {
      throw new IllegalStateException("once must be the first operation of a call");
    }
    return op("once", record, OperationKeys.hex(fingerprint),
        shape + " " + pexpire + " " + (now == null ? "-" : now) + " " + (exp == null ? "-" : exp));
  }

  /** One call holding a transaction's operations. */
  static CounterScript of(List<TxOp> ops) {
    return new CounterScript().all(ops);
  }

  /** Appends a transaction's operations. */
  CounterScript all(List<TxOp> ops) {
    CounterScript s = this;
    for (TxOp op : ops) {
      if (op instanceof TxOp.Incr i && i.bounds() != null) {
        s.incrWithin(i.key(), i.delta(), i.dflt(), i.create(), i.bounds());
      } else if (op instanceof TxOp.Incr i) {
        s.incr(i.key(), i.delta(), i.dflt(), i.create());
      } else if (op instanceof TxOp.IncrDouble d) {
        s.incrDouble(d.key(), d.delta(), d.dflt());
      } else if (op instanceof TxOp.Put p) {
        s.put(p.key(), p.value(), p.ttlNanos());
      } else if (op instanceof TxOp.Delete d) {
        s.delete(d.key());
      } else if (op instanceof TxOp.Get g) {
        s.get(g.key());
      } else {
        throw new IllegalArgumentException("unknown transaction operation " + op);
      }
    }
    return s;
  }

  private CounterScript op(String code, String key, String a, String b) {
    Integer index = keyIndex.computeIfAbsent(key, k -> keyIndex.size() + 1);
    args.add(code);
    args.add(index.toString());
    args.add(a);
    args.add(b);
    return this;
  }

  String[] keys() {
    return keyIndex.keySet().toArray(String[]::new);
  }

  String[] args() {
    return args.toArray(String[]::new);
  }

  /** A ttl for {@code PX}: whole milliseconds, rounded up so that no ttl becomes zero. */
  static long millis(long ttlNanos) {
    long ms = ttlNanos / 1_000_000;
    return ttlNanos % 1_000_000 == 0 ? ms : ms + 1;
  }
}
