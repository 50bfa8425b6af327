package dev.tally.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Block coverage for a Redis Lua script: {@link #instrument} puts a counter at the start of every
 * block (after each {@code then}, {@code else}, {@code do}, {@code repeat} and function header
 * outside strings and comments), which the script, run inside Redis, increments in a hash. What
 * a run never reached is then {@link #unreached}: the arithmetic the run did not exercise.
 *
 * <p>The counter is a plain {@code HINCRBY} on a key the script does not declare, which a
 * standalone Redis allows: the instrumented script is for a coverage run only, never shipped.
 */
final class LuaCoverage {
  /** The hash the instrumented script counts in: field {@code file:line:n}, value the hits. */
  static final String HASH = "tally:coverage:lua";

  private final String name;
  private final String source;
  private final String instrumented;
  private final Map<String, String> points; // "file:line:n" -> the source line, for the report

  private LuaCoverage(String name, String source, String instrumented, Map<String, String> points) {
    this.name = name;
    this.source = source;
    this.instrumented = instrumented;
    this.points = points;
  }

  /**
   * {@code source}, the file {@code name}, with a counter at the start of each block. The counters
   * are named after the file, so that the files Script.load puts together count apart.
   */
  static LuaCoverage instrument(String name, String source) {
    String[] lines = source.split("\n", -1);
    StringBuilder out = new StringBuilder(source.length() * 2);
    Map<String, String> points = new TreeMap<>(LuaCoverage::byLine);
    boolean inLongComment = false;
    for (int ln = 0; ln < lines.length; ln++) {
      String line = lines[ln];
      int lineNo = ln + 1;
      int n = 0;
      StringBuilder b = new StringBuilder(line.length() + 64);
      int i = 0;
      if (inLongComment) {
        int end = line.indexOf("]]");
        if (end < 0) {
          out.append(line).append('\n');
          continue;
        }
        b.append(line, 0, end + 2);
        i = end + 2;
        inLongComment = false;
      }
      while (i < line.length()) {
        char c = line.charAt(i);
        if (c == '-' && line.startsWith("--", i)) {
          if (line.startsWith("--[[", i)) {
            int end = line.indexOf("]]", i + 4);
            if (end < 0) {
              inLongComment = true;
              b.append(line, i, line.length());
              i = line.length();
              break;
            }
            b.append(line, i, end + 2);
            i = end + 2;
            continue;
          }
          b.append(line, i, line.length()); // a comment to the end of the line
          break;
        }
        if (c == '\'' || c == '"') {
          int j = i + 1;
          while (j < line.length() && line.charAt(j) != c) {
            j += line.charAt(j) == '\\' ? 2 : 1;
          }
          j = Math.min(j + 1, line.length());
          b.append(line, i, j);
          i = j;
          continue;
        }
        if (Character.isLetter(c) || c == '_') {
          int j = i;
          while (j < line.length() && (Character.isLetterOrDigit(line.charAt(j)) || line.charAt(j) == '_')) {
            j++;
          }
          String word = line.substring(i, j);
          b.append(word);
          i = j;
          boolean blockStart = word.equals("then") || word.equals("else") || word.equals("do")
              || word.equals("repeat");
          if (word.equals("function")) { // the block starts after the parameter list
            int close = line.indexOf(')', i);
            if (close < 0) {
              continue; // a header over several lines: not counted
            }
            b.append(line, i, close + 1);
            i = close + 1;
            blockStart = true;
          }
          if (blockStart) {
            String point = name + ":" + lineNo + ":" + (++n);
            points.put(point, line.strip());
            b.append(" redis.call('HINCRBY', '").append(HASH).append("', '").append(point).append("', 1) ");
          }
          continue;
        }
        b.append(c);
        i++;
      }
      out.append(b);
      if (ln < lines.length - 1) {
        out.append('\n');
      }
    }
    return new LuaCoverage(name, source, out.toString(), points);
  }

  private static int byLine(String a, String b) {
    int c = Integer.compare(part(a, 0), part(b, 0));
    return c != 0 ? c : Integer.compare(part(a, 1), part(b, 1));
  }

  /** The line (0) or the block's number on it (1) of a point "file:line:n". */
  private static int part(String point, int which) {
    String[] parts = point.split(":", -1);
    return Integer.parseInt(parts[parts.length - 2 + which]);
  }

  /** The file's name, as the counters and the report give it. */
  String name() {
    return name;
  }

  String source() {
    return source;
  }

  /** The script with its counters. */
  String instrumented() {
    return instrumented;
  }

  /** How many blocks carry a counter. */
  int blocks() {
    return points.size();
  }

  /** The blocks the run never entered, as "file:line: source line", given the hash's fields. */
  List<String> unreached(Map<String, String> hits) {
    List<String> out = new ArrayList<>();
    points.forEach((point, text) -> {
      if (!hits.containsKey(point)) {
        out.add(point.substring(0, point.lastIndexOf(':')) + ": " + text);
      }
    });
    return out;
  }
}
