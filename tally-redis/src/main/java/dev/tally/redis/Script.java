package dev.tally.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * A Lua script kept as a resource file next to this class (never assembled from Java strings),
 * with the SHA-1 digest Redis caches it under.
 */
final class Script {
  private final String name;
  private final String body;
  private final String sha;

  private Script(String name, String body) {
    this.name = name;
    this.body = body;
    try {
      this.sha = HexFormat.of().formatHex(
          MessageDigest.getInstance("SHA-1").digest(body.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("the JDK has no SHA-1", e);
    }
  }

  /** Loads {@code dev/tally/redis/<name>} from the class path. */
  static Script load(String name) {
    try (InputStream in = Script.class.getResourceAsStream(name)) {
      if (in == null) {
        throw new IllegalStateException("script resource " + name + " is missing from tally-redis");
      }
      return new Script(name, new String(in.readAllBytes(), StandardCharsets.UTF_8));
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

  @Override
  public String toString() {
    return name + "@" + sha.substring(0, 8);
  }
}
