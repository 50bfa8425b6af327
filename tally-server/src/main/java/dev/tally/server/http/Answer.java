package dev.tally.server.http;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A complete HTTP answer, independent of the connection it goes out on (HTTP/1.1 or an HTTP/2
 * stream): status, header fields in order, content type and body.
 */
final class Answer {
  static final byte[] EMPTY = new byte[0];

  private final int status;
  /** Made on the first {@link #header}: most answers have none besides the content's. */
  private List<Map.Entry<String, String>> headers;
  private final String contentType;
  private final byte[] body;
  private final int contentLength;

  private Answer(int status, List<Map.Entry<String, String>> headers, String contentType,
      byte[] body, int contentLength) {
    this.status = status;
    this.headers = headers;
    this.contentType = contentType;
    this.body = body;
    this.contentLength = contentLength;
  }

  static Answer of(int status, String contentType, byte[] body) {
    return new Answer(status, null, contentType, body, body.length);
  }

  /** {@code reply} as an answer, its integers as strings if {@code int64Strings}. */
  static Answer of(Reply reply, boolean int64Strings) {
    Answer a = of(reply.status(), reply.contentType(), reply.bytes(int64Strings));
    if (!reply.headers().isEmpty()) {
      reply.headers().forEach(a::header);
    }
    return a;
  }

  Answer header(String name, String value) {
    if (headers == null) {
      headers = new ArrayList<>(4);
    }
    headers.add(Map.entry(name, value));
    return this;
  }

  int status() {
    return status;
  }

  /** The header fields besides Content-Type and Content-Length, in order. */
  List<Map.Entry<String, String>> headers() {
    return headers == null ? List.of() : headers;
  }

  String contentType() {
    return contentType;
  }

  byte[] body() {
    return body;
  }

  /** The length of the body, also for an answer to HEAD, which leaves the body out. */
  int contentLength() {
    return contentLength;
  }

  /** The same answer without its body (HEAD), the length still that of the body left out. */
  Answer withoutBody() {
    return new Answer(status, headers, contentType, EMPTY, contentLength);
  }
}
