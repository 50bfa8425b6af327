package dev.tally.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;

class MainTest {
  @Test
  void typosFindTheCommandMeant() {
    List<String> commands = List.of("incr", "decr", "get", "put", "pop", "keys", "limit", "serve", "bench");
    assertThat(Main.closest("icnr", commands)).isEqualTo("incr");
    assertThat(Main.closest("sevre", commands)).isEqualTo("serve");
    assertThat(Main.closest("frobnicate", commands)).isNull();
  }

  @Test
  void inProcessRunsReturnTheExitCode() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Main.run(new String[] {"--store", "mem:", "incr", "k", "41", "--default", "1"},
        new PrintWriter(out, true), new PrintWriter(err, true));
    assertThat(code).isZero();
    assertThat(out.toString()).isEqualTo("42\n");
    assertThat(Main.run(new String[] {"--store", "mem:", "get", "k"}, new PrintWriter(out, true),
        new PrintWriter(err, true))).isEqualTo(3);
  }

  @Test
  void serveRefusesABodyLimitItCannotHonour() {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    int code = Main.run(new String[] {"--store", "mem:", "serve", "--port", "0", "--max-body", "2147483647"},
        new PrintWriter(out, true), new PrintWriter(err, true));
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("--max-body must be between 1 and 16777216 bytes");
    StringWriter none = new StringWriter();
    assertThat(Main.run(new String[] {"--store", "mem:", "serve", "--port", "0", "--max-body", "0"},
        new PrintWriter(out, true), new PrintWriter(none, true))).isEqualTo(2);
    assertThat(none.toString()).contains("--max-body must be between 1 and 16777216 bytes");
  }

  @Test
  void serveRefusesAllOrNothingWithoutRulesOrOnRedisCluster() {
    StringWriter err = new StringWriter();
    int code = Main.run(new String[] {"--store", "mem:", "serve", "--port", "0", "--rls-all-or-nothing"},
        new PrintWriter(new StringWriter(), true), new PrintWriter(err, true));
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("--rls-all-or-nothing decides the named limits of rules files");
    // refused before the store is opened: nothing listens on port 1
    err = new StringWriter();
    code = Main.run(new String[] {"--store", "redis-cluster://127.0.0.1:1", "serve", "--port", "0",
        "--rules", "no-such-rules.yaml", "--rls-all-or-nothing"},
        new PrintWriter(new StringWriter(), true), new PrintWriter(err, true));
    assertThat(code).isEqualTo(2);
    assertThat(err.toString()).contains("on Redis Cluster their limiters (rls:DOMAIN:...) hash to"
        + " different slots");
  }

  @Test
  void withJsonEveryErrorIsTheHttpErrorBodyOnStdout() {
    for (String[] args : List.of(
        new String[] {"--json", "--store", "mem:", "limit", "try", "api"}, // no limit: found running
        new String[] {"--json", "--store", "mem:", "incr"}, // no key: found parsing
        new String[] {"--json", "--store", "nosuch:", "get", "k"})) { // no such store
      StringWriter out = new StringWriter();
      StringWriter err = new StringWriter();
      int code = Main.run(args, new PrintWriter(out, true), new PrintWriter(err, true));
      assertThat(code).as(String.join(" ", args)).isEqualTo(2);
      assertThat(out.toString()).as(String.join(" ", args))
          .startsWith("{\"type\":\"about:blank\",\"title\":\"Bad Request\",\"status\":400,\"detail\":")
          .contains("\"error\":\"bad_request\",\"message\":");
      assertThat(err.toString()).as(String.join(" ", args)).isEmpty();
    }
  }
}
