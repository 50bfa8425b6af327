package dev.tally.server.http;

import java.io.IOException;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * One {@code tally serve} process shared by a test class's tests: started before the first,
 * stopped after the last. Declare it as
 * {@code @RegisterExtension static final ServerForClass server = new ServerForClass(ARGS...)}.
 */
final class ServerForClass implements BeforeAllCallback, AfterAllCallback, LoopbackHttp {
  private final String[] args;
  private ServerProcess process;

  /** A server that {@code tally serve --port 0 ARGS} starts. */
  ServerForClass(String... args) {
    this.args = args.clone();
  }

  @Override
  public void beforeAll(ExtensionContext context) throws IOException {
    process = ServerProcess.start(args);
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (process != null) {
      process.close();
    }
  }

  private ServerProcess process() {
    if (process == null) {
      throw new IllegalStateException("the server is not started: register the ServerForClass as a"
          + " static field with @RegisterExtension, so it starts before the class's tests");
    }
    return process;
  }

  @Override
  public int port() {
    return process().uri.getPort();
  }

  /** What the server has written to stderr. */
  String stderr() throws IOException {
    return process().stderr();
  }
}
