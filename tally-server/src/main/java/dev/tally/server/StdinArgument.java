package dev.tally.server;

import dev.tally.Counters;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;

/**
 * {@code -} in place of a key, a limiter name or a transaction's operations: the lines of stdin,
 * one each, as {@code cat}, {@code grep} and {@code jq} read {@code -}. A key that really is
 * {@code -} comes after {@code --} ({@code tally incr -- -}), which ends the options in every
 * Unix tool.
 *
 * <p>All of stdin is read and checked before the first operation, so a bad line (empty, not
 * UTF-8, a key too long) is refused with nothing changed, as a bad argument is.
 */
final class StdinArgument {
  static final String DASH = "-";

  private StdinArgument() {}

  /** Whether {@code arg} stands for stdin: it is {@code -}, and not after {@code --}. */
  static boolean isStdin(CommandLine cl, String arg) {
    if (!DASH.equals(arg)) {
      return false;
    }
    CommandLine root = cl;
    while (root.getParent() != null) {
      root = root.getParent();
    }
    List<String> args = root.getParseResult() == null ? List.of() : root.getParseResult().expandedArgs();
    int endOfOptions = args.indexOf("--");
    return endOfOptions < 0 || args.subList(0, endOfOptions).contains(DASH);
  }

  /** What the lines are, for the messages: {@code keys}, {@code limiter names}, {@code operations}. */
  enum What {
    KEYS("key", "keys", "echo views | tally incr -", "tally incr -- -"),
    NAMES("limiter name", "limiter names",
        "echo api:user:42 | tally limit try - --token-bucket 100/1m",
        "tally limit try --token-bucket 100/1m -- -"),
    OPERATIONS("operation", "operations", "echo 'incr views' | tally transaction -", null);

    final String one;
    final String many;
    final String example;
    final String literal;

    What(String one, String many, String example, String literal) {
      this.one = one;
      this.many = many;
      this.example = example;
      this.literal = literal;
    }
  }

  /** All of stdin. */
  static byte[] bytes(InputStream in) {
    try {
      return in.readAllBytes();
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read stdin: " + e.getMessage(), e);
    }
  }

  /**
   * The lines of {@code in} as UTF-8, without their line ends ({@code \n} or {@code \r\n}).
   *
   * @throws IllegalArgumentException if stdin is empty, a line is empty, not UTF-8, or (for keys
   *     and names) longer than a key may be
   */
  static List<String> lines(InputStream in, What what) {
    byte[] bytes = bytes(in);
    List<String> lines = new ArrayList<>();
    CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
        .onMalformedInput(CodingErrorAction.REPORT)
        .onUnmappableCharacter(CodingErrorAction.REPORT);
    int start = 0;
    while (start < bytes.length) {
      int end = start;
      while (end < bytes.length && bytes[end] != '\n') {
        end++;
      }
      int next = end + 1;
      if (end > start && bytes[end - 1] == '\r') {
        end--;
      }
      int number = lines.size() + 1;
      if (end == start) {
        throw new IllegalArgumentException("stdin line " + number + " is empty: give one "
            + what.one + " per line");
      }
      String line;
      try {
        line = utf8.decode(ByteBuffer.wrap(bytes, start, end - start)).toString();
      } catch (CharacterCodingException e) {
        throw new IllegalArgumentException("stdin line " + number + " is not valid UTF-8; "
            + what.many + " are read as UTF-8");
      }
      // The library checks each key as it goes; checked here too, a long one cannot leave the
      // lines before it applied.
      if (what != What.OPERATIONS) {
        int length = line.getBytes(StandardCharsets.UTF_8).length;
        if (length > Counters.MAX_KEY_BYTES) {
          throw new IllegalArgumentException("stdin line " + number + ": " + what.one + " '"
              + line.substring(0, line.offsetByCodePoints(0, 32)) + "...' is " + length + " bytes in UTF-8; the limit is "
              + Counters.MAX_KEY_BYTES);
        }
      }
      lines.add(line);
      start = next;
    }
    if (lines.isEmpty()) {
      throw new IllegalArgumentException("no " + what.many + " on stdin: '-' reads one " + what.one
          + " per line (" + what.example + ")"
          + (what.literal == null ? "" : "; for a " + what.one + " named '-', put -- before it ("
              + what.literal + ")"));
    }
    return lines;
  }
}
