package dev.tally.server.http;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A complete HTTP answer, independent of the connection it goes out on (HTTP/1.1 or an HTTP/2
 * stream): status, header fields in order, content type and body.
 */
record Answer(int status, List<Map.Entry<String, String>> headers, String contentType, byte[] body,
    int contentLength) {
  static final byte[] EMPTY = new byte[0];

  static Answer of(int status, String contentType, byte[] body) {
    return new Answer(status, new ArrayList<>(4), contentType, body, body.length);
  }

  static Answer of(Reply reply, byte[] body) {
    Answer a = of(reply.status(), reply.contentType(), body);
    reply.headers().forEach(a::header);
    return a;
  }

  Answer header(String name, String value) {
    headers.add(Map.entry(name, value));
    return this;
  }

  /** The same answer without its body (HEAD), the length still that of the body left out. */
  Answer withoutBody() {
    return new Answer(status, headers, contentType, EMPTY, contentLength);
  }
}
