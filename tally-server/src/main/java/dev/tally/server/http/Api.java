package dev.tally.server.http;

import dev.tally.server.app.Stages;

/** What remains of the HTTP API's old core, for the gRPC endpoint: see {@link Stages#unwrap}. */
final class Api {
  private Api() {}

  static Throwable unwrap(Throwable t) {
    return Stages.unwrap(t);
  }
}
