package dev.tally.server.http;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;

/**
 * Bearer-token check. Both tokens are hashed with SHA-256 first and the digests compared with
 * {@link MessageDigest#isEqual}, which takes the same time wherever they differ; hashing first
 * hides the token's length as well.
 */
final class Auth {
  /** Tokens shorter than this are refused: guessable. */
  static final int MIN_TOKEN_LENGTH = 16;

  private final byte[] expected;

  private Auth(byte[] expected) {
    this.expected = expected;
  }

  static final Auth NONE = new Auth(null);

  static Auth bearer(String token) {
    if (token.length() < MIN_TOKEN_LENGTH) {
      throw new IllegalArgumentException("the token is " + token.length() + " characters; use at"
          + " least " + MIN_TOKEN_LENGTH + ", e.g. from: openssl rand -hex 32");
    }
    return new Auth(sha256(token));
  }

  boolean required() {
    return expected != null;
  }

  boolean allows(String authorization) {
    if (expected == null) {
      return true;
    }
    if (authorization == null || !authorization.regionMatches(true, 0, "Bearer ", 0, 7)) {
      return false;
    }
    return MessageDigest.isEqual(expected, sha256(authorization.substring(7).strip()));
  }

  private static byte[] sha256(String s) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(s.getBytes(StandardCharsets.UTF_8));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("SHA-256 is always present", e);
    }
  }
}
