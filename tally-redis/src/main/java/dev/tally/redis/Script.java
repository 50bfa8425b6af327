package dev.tally.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A Lua script kept as resource files next to this class (never assembled from Java strings),
 * with the SHA-1 digest Redis caches it under.
 *
 * <p>Redis scripts cannot load modules, so a file shares code by naming it in a line
 * {@code -- requires: int64.lua} at its top: {@link #load} prepends each file required (and what
 * that one requires, each once) to the script's text, and the digest is that of the whole. Redis
 * then reports a Lua error at a line of the whole text; {@link #locate} names the file and its
 * own line instead.
 */
final class Script {
  private static final Pattern REQUIRES = Pattern.compile("^-- requires: (\\S+)\\s*$", Pattern.MULTILINE);
  private static final Pattern LINE = Pattern.compile("user_script:(\\d+)");

  private final String name;
  private final String body;
  private final String sha;
  private final List<Part> parts;

  /** One file of the script: its name and the first line of the whole text it takes (from 1). */
  private record Part(String name, int firstLine) {}

  private Script(String name, String body, List<Part> parts) {
    this.name = name;
    this.body = body;
    this.parts = List.copyOf(parts);
    try {
      this.sha = HexFormat.of().formatHex(
          MessageDigest.getInstance("SHA-1").digest(body.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-1", e);
    }
  }

  /** Loads {@code dev/tally/redis/<name>} from the class path, after the files it requires. */
  static Script load(String name) {
    Set<String> order = new LinkedHashSet<>();
    required(name, new LinkedHashSet<>(), order);
    StringBuilder body = new StringBuilder();
    List<Part> parts = new ArrayList<>();
    int line = 1;
    for (String file : order) {
      String text = read(file);
      if (!text.endsWith("\n")) {
        text += "\n"; // the next file starts on a line of its own
      }
      parts.add(new Part(file, line));
      body.append(text);
      line += (int) text.chars().filter(c -> c == '\n').count();
    }
    return new Script(name, body.toString(), parts);
  }

  /** Adds the files {@code name} requires, then {@code name}, to {@code order}. */
  private static void required(String name, Set<String> path, Set<String> order) {
    if (order.contains(name)) {
      return;
    }
    if (!path.add(name)) {
      throw new IllegalStateException("script resource " + name + " requires itself through " + path);
    }
    Matcher m = REQUIRES.matcher(read(name));
    while (m.find()) {
      required(m.group(1), path, order);
    }
    path.remove(name);
    order.add(name);
  }

  private static String read(String name) {
    try (InputStream in = Script.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("script resource " + name + " is missing from tally-redis");
      }
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot read script resource " + name, e);
    }
  }

  String name() {
    return name;
  }

  String body() {
    return body;
  }

  /** The SHA-1 of the body in lower-case hex, as {@code EVALSHA} and {@code SCRIPT LOAD} use. */
  String sha() {
    return sha;
  }

  /**
   * {@code message}, an error Redis reported for this script, with each line of the whole text
   * ({@code user_script:812}) given as the file and its own line ({@code limiter.lua:520}).
   */
  String locate(String message) {
    Matcher m = LINE.matcher(message);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      int line;
      try {
        line = Integer.parseInt(m.group(1));
      } catch (NumberFormatException e) {
        continue; // not a line of any script
      }
      Part part = parts.get(0);
      for (Part p : parts) {
        if (p.firstLine() <= line) {
          part = p;
        }
      }
      m.appendReplacement(out, Matcher.quoteReplacement(part.name() + ":" + (line - part.firstLine() + 1)));
    }
    m.appendTail(out);
    return out.toString();
  }

  @Override
  public String toString() {
    return name + "@" + sha.substring(0, 8);
  }
}
