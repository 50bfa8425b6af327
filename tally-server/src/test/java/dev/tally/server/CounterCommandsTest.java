package dev.tally.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.server.InProcess.Run;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What {@code GET /v1/counters?limit=} and {@code GET /healthz} are on the command line. */
class CounterCommandsTest {
  @TempDir
  Path dir;
  InProcess tally;

  @BeforeEach
  void store() {
    tally = new InProcess(dir);
  }

  @Test
  void keysLimitListsTheFirstAndSaysWhenMoreMatch() {
    tally.withStdin("v:3\nv:1\nv:2\nw\n", "incr", "-");
    assertThat(tally.run("keys", "v:", "--limit", "2")).isEqualTo(new Run(0, "v:1\nv:2\n",
        "tally keys: more keys start with 'v:' than the 2 listed; raise --limit to see them\n"));
    assertThat(tally.run("keys", "v:", "--limit", "3")).isEqualTo(new Run(0, "v:1\nv:2\nv:3\n", ""));
    assertThat(tally.run("--json", "keys", "--limit", "1").out())
        .isEqualTo("{\"prefix\":\"\",\"keys\":[\"v:1\"],\"truncated\":true,\"next\":\"v:1\"}\n");
    Run zero = tally.run("keys", "--limit", "0");
    assertThat(zero).isEqualTo(new Run(2, "", "tally keys: --limit must be 1 or more, not 0\n"));
  }

  @Test
  void boundedDecrementsRefuseWithExit1OrSaturate() {
    tally.run("put", "q", "3");
    assertThat(tally.run("decr", "q", "5", "--min", "0")).isEqualTo(new Run(1, "3\n", ""));
    assertThat(tally.run("decr", "q", "2", "--min", "0")).isEqualTo(new Run(0, "1\n", ""));
    assertThat(tally.run("decr", "q", "5", "--min", "0", "--saturate")).isEqualTo(new Run(0, "0\n", ""));
    assertThat(tally.run("--json", "incr", "q", "50", "--max", "10")).isEqualTo(
        new Run(1, "{\"key\":\"q\",\"value\":0,\"applied\":false}\n", ""));
    assertThat(tally.run("incr", "q", "--min", "5", "--max", "4").exit()).isEqualTo(2);
    assertThat(tally.run("incr", "q", "--saturate")).isEqualTo(
        new Run(2, "", "tally incr: --saturate needs a bound: add --min, --max or both\n"));
    assertThat(tally.run("get", "q").out()).isEqualTo("0\n");
  }

  @Test
  void healthReadsTheStore() {
    Run r = tally.run("health");
    assertThat(r.exit()).isZero();
    assertThat(r.out()).matches("ok store=file latency=\\d+(\\.\\d+)?(us|ms|s)\n");
    assertThat(tally.run("--json", "health").out()).startsWith("{\"status\":\"ok\",\"store\":\"file\"");
    assertThat(tally.keys()).as("a read writes nothing").isEmpty();
  }

  @Test
  void healthOfAStoreThatCannotBeReachedExits4() {
    java.io.StringWriter out = new java.io.StringWriter();
    java.io.StringWriter err = new java.io.StringWriter();
    int code = Main.run(new String[] {"--store", "redis://127.0.0.1:1?timeout=1s", "health"},
        new java.io.PrintWriter(out, true), new java.io.PrintWriter(err, true));
    assertThat(code).as(err.toString()).isEqualTo(4);
    assertThat(err.toString()).startsWith("tally: ");
  }
}
