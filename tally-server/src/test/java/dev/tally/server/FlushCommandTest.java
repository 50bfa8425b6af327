package dev.tally.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.jdbc.FlushBusyException;
import dev.tally.server.app.Problem;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import org.junit.jupiter.api.Test;

/**
 * The exit codes of {@code tally flush} that need no database (tally-jdbc's FlushTest runs the
 * flush itself against a real one): each outcome its own code, as docs/cli.md lists them.
 */
class FlushCommandTest {
  private static final String SQL = "UPDATE episodes SET views = views + :count WHERE id = :suffix::bigint";

  private record Run(int exit, String out, String err) {}

  private static Run flush(String into, String sql) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int exit = Main.run(new String[] {"--store", "mem:", "flush", "--prefix", "views:", "--into", into, "--sql", sql},
        new PrintWriter(out, true), new PrintWriter(err, true));
    return new Run(exit, out.toString(), err.toString());
  }

  @Test
  void aStatementWithoutCountIsBadInput() {
    Run r = flush("postgresql://app@127.0.0.1:" + closedPort() + "/app?timeout=1s", "UPDATE episodes SET views = 1");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).contains("must use :count");
  }

  @Test
  void aDatabaseThatCannotBeReachedExitsFour() {
    Run r = flush("postgresql://app@127.0.0.1:" + closedPort() + "/app?timeout=1s", SQL);
    assertThat(r.exit()).as(r.err()).isEqualTo(4);
    assertThat(r.err()).contains("flush of 'views:'").contains("next run finishes the rest");
  }

  @Test
  void anotherFlusherHoldingThePrefixHasItsOwnCodeNotAConflict() {
    Problem p = Problem.of(new FlushBusyException("another flusher is flushing 'views:'"));
    assertThat(p).isEqualTo(Problem.FLUSH_BUSY);
    assertThat(p.exitCode()).isEqualTo(6).isNotEqualTo(Problem.CONFLICT.exitCode());
    assertThat(p.code()).isEqualTo("flush_busy");
  }

  /** A loopback port nothing listens on: connections to it are refused at once. */
  private static int closedPort() {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      return s.getLocalPort();
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }
}
