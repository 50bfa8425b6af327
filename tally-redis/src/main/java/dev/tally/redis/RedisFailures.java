package dev.tally.redis;

import dev.tally.Durations;
import dev.tally.Bounds;
import dev.tally.CounterOverflowException;
import dev.tally.KeyNotFoundException;
import dev.tally.NotAnIntegerException;
import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import dev.tally.TallyException;
import dev.tally.WrongKindException;
import dev.tally.spi.CounterMath;
import dev.tally.spi.LimiterRecord;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.RedisCommandInterruptedException;
import io.lettuce.core.RedisCommandTimeoutException;
import io.lettuce.core.RedisException;
import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Turns what Lettuce and Redis report into the exceptions Tally promises, in one place.
 *
 * <table>
 *   <caption>What a caller sees</caption>
 *   <tr><th>Redis / Lettuce</th><th>Tally</th></tr>
 *   <tr><td>no reply within the timeout</td><td>{@link StoreTimeoutException} (may have applied)</td></tr>
 *   <tr><td>not connected (nothing sent), connection lost with the command in flight (may have
 *       applied), server loading, read-only replica, cluster down, busy script</td>
 *       <td>{@link StoreUnavailableException}</td></tr>
 *   <tr><td>{@code TALLY_OVERFLOW}, {@code TALLY_NOT_FINITE}, INCRBY's "would overflow"</td>
 *       <td>{@link CounterOverflowException}</td></tr>
 *   <tr><td>{@code TALLY_NOT_FOUND}</td><td>{@link KeyNotFoundException}</td></tr>
 *   <tr><td>{@code TALLY_OUT_OF_BOUNDS}</td><td>{@link dev.tally.CounterBoundException}</td></tr>
 *   <tr><td>{@code TALLY_NOT_INTEGER}, INCRBY's "not an integer"</td><td>{@link NotAnIntegerException}</td></tr>
 *   <tr><td>{@code TALLY_NOT_A_COUNTER}, {@code WRONGTYPE}</td><td>{@link TallyException}: the key
 *       holds something Tally did not write</td></tr>
 *   <tr><td>any other error reply (OOM, ACL, ...)</td><td>{@link StoreException} with Redis' message</td></tr>
 * </table>
 *
 * The script errors are {@code TALLY_<WHAT> <n>}, where {@code n} is the 1-based index in
 * {@code KEYS} of the counter concerned.
 */
final class RedisFailures {
  private RedisFailures() {}

  /** The exception to throw for {@code failure} of a command on {@code keys}. */
  static RuntimeException translate(Throwable failure, String[] keys, Duration timeout) {
    Throwable t = unwrap(failure);
    if (t instanceof TallyException || t instanceof IllegalArgumentException) {
      return (RuntimeException) t; // ours already
    }
    if (t instanceof RedisCommandTimeoutException) {
      return new StoreTimeoutException("Redis did not answer within " + Durations.format(timeout) + " (" + describe(keys)
          + "); the operation may or may not have been applied", t);
    }
    if (t instanceof RedisCommandExecutionException) {
      return errorReply(t, String.valueOf(t.getMessage()), keys);
    }
    if (t instanceof RedisCommandInterruptedException) {
      return new StoreException("interrupted while waiting for Redis (" + describe(keys) + ")", t);
    }
    if (t instanceof RedisException || t instanceof IOException || t instanceof CancellationException) {
      String message = String.valueOf(t.getMessage());
      String applied = message.startsWith("Currently not connected")
          ? "not connected, so nothing was sent"
          : message + "; the operation was in flight and may or may not have been applied";
      return new StoreUnavailableException("Redis is unreachable (" + describe(keys) + "): " + applied, t);
    }
    return new StoreException("Redis call failed (" + describe(keys) + "): " + t, t);
  }

  private static RuntimeException errorReply(Throwable t, String message, String[] keys) {
    int space = message.indexOf(' ');
    String code = space < 0 ? message : message.substring(0, space);
    if (code.startsWith("TALLY_")) {
      String key = code.equals("TALLY_BAD_STATE") || code.equals("TALLY_NO_QUOTA")
          || code.equals("TALLY_CLOCK_SKEW") || code.equals("TALLY_VERSION") ? keys[0] : keyAt(message, space, keys);
      switch (code) {
        case "TALLY_VERSION":
          return version(key, scriptMessage(message, space), t);
        case "TALLY_OVERFLOW":
          return overflow(key, scriptMessage(message, space));
        case "TALLY_NOT_FINITE":
          return notFinite(key, scriptMessage(message, space));
        case "TALLY_NOT_FOUND":
          return new KeyNotFoundException(key);
        case "TALLY_OUT_OF_BOUNDS":
          return outOfBounds(key, scriptMessage(message, space));
        case "TALLY_NOT_INTEGER":
          return new NotAnIntegerException(key);
        case "TALLY_NOT_A_COUNTER":
          return CounterValues.notACounter(key, null);
        case "TALLY_NO_QUOTA":
          return new IllegalStateException("limiter '" + key + "' has no quota limit to top up");
        case "TALLY_BAD_STATE":
          return new IllegalStateException("stored state of limiter '" + key + "': "
              + scriptMessage(message, space));
        case "TALLY_CLOCK_SKEW":
          return new ClockSkewException(key, Long.parseLong(scriptMessage(message, space).strip()), t);
        default:
          return new StoreException("Tally script error: " + message, t);
      }
    }
    String key = keys.length == 1 ? keys[0] : describe(keys);
    switch (code) {
      case "ERR":
        if (message.contains("increment or decrement would overflow")) {
          return integerOverflow(key);
        }
        if (message.contains("value is not an integer")) {
          return new NotAnIntegerException(key);
        }
        break;
      case "WRONGTYPE":
        // A counter's command met a hash: a limiter's state (forLimiter turns it round).
        return new WrongKindException(key, WrongKindException.Kind.LIMITER);
      case "LOADING":
      case "READONLY":
      case "MASTERDOWN":
      case "CLUSTERDOWN":
      case "TRYAGAIN":
      case "BUSY":
      case "NOREPLICAS":
        return new StoreUnavailableException("Redis cannot serve " + describe(keys) + " now: " + message, t);
      default:
        break;
    }
    return new StoreException("Redis refused the command on " + describe(keys) + ": " + message, t);
  }

  /** The text after the code of a script error, without the "script: ..." Redis appends. */
  private static String scriptMessage(String message, int space) {
    String text = space < 0 ? "" : message.substring(space + 1);
    int script = text.indexOf(" script: ");
    return (script < 0 ? text : text.substring(0, script)).trim();
  }

  /** LimiterRecord's refusal of a state in another record format. */
  private static StoreException version(String key, String found, Throwable t) {
    try {
      LimiterRecord.read(key, Integer.parseInt(found), Long.MIN_VALUE, new long[0]);
    } catch (StoreException refused) {
      return refused;
    } catch (NumberFormatException unreadable) {
      // fall through
    }
    return new StoreException("the state of rate limiter '" + key + "' is in record format '" + found
        + "', which this Tally does not read; reset the limiter to start it afresh", t);
  }

  /** CounterMath's message, from the script's "index value delta". */
  private static CounterOverflowException overflow(String key, String detail) {
    String[] words = detail.split(" ", -1);
    if (words.length == 3) {
      try {
        return CounterMath.overflow(key, Long.parseLong(words[1]), Long.parseLong(words[2]));
      } catch (NumberFormatException unreadable) {
        // fall back to the message without the numbers
      }
    }
    return integerOverflow(key);
  }

  /** CounterMath's refusal of a bounded increment: the words are the index, value, delta, min, max. */
  private static RuntimeException outOfBounds(String key, String detail) {
    String[] words = detail.split(" ", -1);
    try {
      return CounterMath.outOfBounds(key, Long.parseLong(words[1]), Long.parseLong(words[2]),
          Bounds.between(Long.parseLong(words[3]), Long.parseLong(words[4])));
    } catch (RuntimeException unreadable) {
      return new StoreException("unreadable bound refusal from counters.lua: " + detail, unreadable);
    }
  }

  /** CounterMath's message for a floating sum that is not finite. */
  private static CounterOverflowException notFinite(String key, String detail) {
    String[] words = detail.split(" ", -1);
    if (words.length == 3) {
      try {
        CounterMath.add(key, Double.parseDouble(words[1]), Double.parseDouble(words[2]));
      } catch (CounterOverflowException e) {
        return e;
      } catch (NumberFormatException unreadable) {
        // fall back to the message without the numbers
      }
    }
    return new CounterOverflowException("counter '" + key + "': the floating result is not finite;"
        + " the value is unchanged");
  }

  private static String keyAt(String message, int space, String[] keys) {
    if (space > 0) {
      try {
        String rest = message.substring(space + 1).trim();
        int end = rest.indexOf(' ');
        int index = Integer.parseInt(end < 0 ? rest : rest.substring(0, end));
        if (index >= 1 && index <= keys.length) {
          return keys[index - 1];
        }
      } catch (NumberFormatException ignored) {
        // no index: fall back to the first key
      }
    }
    return keys.length > 0 ? keys[0] : "?";
  }

  /**
   * {@code failure} of a limiter call on {@code key}, already translated: a {@code WRONGTYPE}
   * there means the key holds a string, a counter's kind.
   */
  static RuntimeException forLimiter(Throwable failure, String key) {
    if (failure instanceof WrongKindException w && w.held() == WrongKindException.Kind.LIMITER) {
      return new WrongKindException(key, WrongKindException.Kind.COUNTER);
    }
    return failure instanceof RuntimeException r ? r : new StoreException("Redis call failed: " + failure, failure);
  }

  static CounterOverflowException integerOverflow(String key) {
    return new CounterOverflowException("counter '" + key + "': the result leaves the signed 64-bit"
        + " range; the value is unchanged");
  }

  static Throwable unwrap(Throwable t) {
    while ((t instanceof CompletionException || t instanceof ExecutionException) && t.getCause() != null) {
      t = t.getCause();
    }
    return t;
  }

  private static String describe(String[] keys) {
    if (keys.length == 0) {
      return "no key";
    }
    String first = keys[0].length() > 64 ? keys[0].substring(0, 60) + "…" : keys[0];
    return keys.length == 1 ? "key '" + first + "'" : "keys '" + first + "' and " + (keys.length - 1) + " more";
  }
}
