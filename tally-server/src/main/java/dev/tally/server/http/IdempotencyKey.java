package dev.tally.server.http;

import io.netty.handler.codec.http.HttpHeaders;
import dev.tally.server.app.RequestException;
import dev.tally.spi.OperationId;
import io.netty.util.AsciiString;
import java.util.List;

/**
 * The {@code Idempotency-Key} request field of the IETF httpapi draft "The Idempotency-Key HTTP
 * Header Field", draft-ietf-httpapi-idempotency-key-header-07: an RFC 8941 String,
 * {@code Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"}. A bare token (no quotes), as
 * many clients send it, is taken as the same key. The key becomes the operation id of the
 * request's store call, so the store itself, for every process and host sharing it, answers a
 * repeat with the first answer (draft section 2.6) and a key reused for another request with
 * 422; a missing key where the server requires one, or a malformed one, is 400.
 */
final class IdempotencyKey {
  private static final AsciiString NAME = AsciiString.cached("idempotency-key");

  private IdempotencyKey() {}

  /** The key of a request, or null if it has none (and none is required). */
  static String of(HttpHeaders headers, boolean required) {
    List<String> all = headers.contains(NAME) ? headers.getAll(NAME) : List.of();
    if (all.isEmpty()) {
      if (required) {
        throw new RequestException("this server requires an Idempotency-Key on every request that"
            + " changes something, e.g. Idempotency-Key: \"8e03978e-40d5-43e8-bc93-6894a57f9324\"");
      }
      return null;
    }
    if (all.size() > 1 || all.get(0).contains(",")) {
      throw new RequestException("a request carries one Idempotency-Key, not several");
    }
    String v = all.get(0).strip();
    String key = v.startsWith("\"") ? sfString(v) : v;
    try {
      return OperationId.of(key).value(); // the key is the store's operation id, checked as one
    } catch (IllegalArgumentException e) {
      throw new RequestException("the Idempotency-Key is not valid: " + e.getMessage());
    }
  }

  /** An RFC 8941 sf-string: quoted, with {@code \"} and {@code \\} its only escapes. */
  private static String sfString(String v) {
    StringBuilder b = new StringBuilder(v.length());
    for (int i = 1; i < v.length(); i++) {
      char c = v.charAt(i);
      if (c == '\\') {
        if (i + 1 < v.length() && (v.charAt(i + 1) == '"' || v.charAt(i + 1) == '\\')) {
          b.append(v.charAt(++i));
          continue;
        }
        break;
      }
      if (c == '"') {
        if (i != v.length() - 1) {
          break;
        }
        return b.toString();
      }
      b.append(c);
    }
    throw new RequestException("the Idempotency-Key is not a structured-field string: write it in"
        + " double quotes, e.g. Idempotency-Key: \"8e03978e-40d5-43e8-bc93-6894a57f9324\"");
  }
}
