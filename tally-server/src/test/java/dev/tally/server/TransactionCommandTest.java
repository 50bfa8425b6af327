package dev.tally.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.server.InProcess.Run;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code tally transaction}: POST /v1/transactions on the command line. */
class TransactionCommandTest {
  @TempDir
  Path dir;
  InProcess tally;

  @BeforeEach
  void store() {
    tally = new InProcess(dir);
  }

  @Test
  void operationsInWordsApplyTogetherAndPrintOneResultEach() {
    tally.run("put", "gone", "9");
    Run r = tally.run("transaction", "incr a", "incr b 5 --default 10", "decr c 2", "get nothing",
        "put d 3 --ttl 1h", "del gone", "delete nothing", "get b", "incr f 0.5");
    assertThat(r).isEqualTo(new Run(0, "1\n15\n-2\nmissing\n3\ndeleted\nmissing\n15\n0.5\n", ""));
    assertThat(tally.keys()).isEqualTo("a\nb\nc\nd\nf\n");
    assertThat(tally.run("ttl", "d").out()).matches("(1h|59m\\d+s)\n");
  }

  @Test
  void allOrNone() {
    tally.run("put", "a", "1");
    Run r = tally.run("tx", "incr a", "incr absent --must-exist");
    assertThat(r).isEqualTo(new Run(3, "", "tally: counter 'absent' does not exist (or has"
        + " expired), and mustExist forbids creating it\n"));
    assertThat(tally.run("get", "a").out()).isEqualTo("1\n");
    assertThat(tally.keys()).isEqualTo("a\n");
  }

  @Test
  void jsonObjectsStdinAndAFileMeanTheSame() throws Exception {
    String body = "{\"ops\":[{\"op\":\"incr\",\"key\":\"a b\",\"delta\":2},{\"op\":\"get\",\"key\":\"a b\"}]}";
    String expected = "{\"results\":[{\"key\":\"a b\",\"value\":2},{\"key\":\"a b\",\"value\":2}]}\n";
    assertThat(tally.run("--json", "tx", "{\"op\":\"incr\",\"key\":\"a b\",\"delta\":2}",
        "{\"op\":\"get\",\"key\":\"a b\"}").out()).isEqualTo(expected);
    tally.run("del", "a b");
    assertThat(tally.withStdin("{\"op\":\"incr\",\"key\":\"a b\",\"delta\":2}\nget a b\n",
        "--json", "tx", "-").exit()).as("'get a b' is a key with a space: words cannot say it")
        .isEqualTo(2);
    assertThat(tally.withStdin("{\"op\":\"incr\",\"key\":\"a b\",\"delta\":2}\n"
        + "{\"op\":\"get\",\"key\":\"a b\"}\n", "--json", "tx", "-").out()).isEqualTo(expected);
    tally.run("del", "a b");
    Path file = Files.writeString(dir.resolve("ops.json"), body);
    assertThat(tally.run("--json", "tx", "--file", file.toString()).out()).isEqualTo(expected);
    tally.run("del", "a b");
    assertThat(tally.withStdin(body, "--json", "tx", "--file", "-").out()).isEqualTo(expected);
  }

  @Test
  void wordsFromStdinOneOperationPerLine() {
    assertThat(tally.withStdin("incr a\nincr a 2\nget a\n", "tx", "-").out())
        .isEqualTo("1\n3\n3\n");
  }

  @Test
  void badOperationsAreRefusedSayingWhichAndChangeNothing() throws Exception {
    Path file = Files.writeString(dir.resolve("bad.json"), "{\"ops\":[{\"op\":\"incr\",\"key\":\"a\"},");
    List<List<String>> cases = List.of(
        List.of("tx", "incr a", "frob b"),
        List.of("tx", "incr a", "incr b ten"),
        List.of("tx", "incr a", "incr b --ttl 1h"),
        List.of("tx", "incr a", "put b"),
        List.of("tx", "incr a", "put b 5 --ttl 40days"),
        List.of("tx", "incr a", "incr"),
        List.of("tx", "incr a", "get b c"),
        List.of("tx", "incr a", "incr b --default"),
        List.of("tx", "incr a", "put b 0.5"),
        List.of("tx", "incr a", "{\"op\":\"incr\",\"kye\":\"b\"}"),
        List.of("tx", "incr a", "{\"op\":\"incr\""),
        List.of("tx"),
        List.of("tx", "incr a", "--file", file.toString()),
        List.of("tx", "--file", file.toString()),
        List.of("tx", "--file", dir.resolve("absent.json").toString()));
    List<String> messages = List.of(
        "tally: ops[1] 'frob b': 'frob' is not an operation: expected incr, decr, put, get or del (or a JSON object)\n",
        "tally: ops[1] 'incr b ten': 'ten' is not a valid delta: expected an integer like 5 or -3, or a decimal like 0.5\n",
        "tally: ops[1] 'incr b --ttl 1h': unknown option '--ttl' for incr; its options: --default N, --must-exist\n",
        "tally: ops[1] 'put b': missing VALUE, e.g. 'put b 5'\n",
        "tally: ops[1] 'put b 5 --ttl 40days': --ttl: '40days' is not a duration: expected a duration like 500ms, 30s, 5m, 40d\n",
        "tally: ops[1] 'incr': missing KEY, e.g. 'incr views'\n",
        "tally: ops[1] 'get b c': unexpected 'c' (a key with spaces goes in a JSON object: {\"op\":\"get\",\"key\":\"...\"})\n",
        "tally: ops[1] 'incr b --default': --default needs a value, e.g. --default 10\n",
        "tally: ops[1]: a transaction puts integer values only\n",
        "tally: unknown field 'ops[1].kye'; expected one of default, delta, key, mustExist, op, ttl, value\n",
        "tally: ops[1]: malformed JSON: ...",
        "tally: give at least one operation, e.g. tally transaction 'incr req:total' 'get views', or - to read them from stdin\n",
        "tally: give operations or --file, not both\n",
        "tally: malformed JSON: ...",
        "tally: --file " + dir.resolve("absent.json") + ": no such file\n");
    for (int i = 0; i < cases.size(); i++) {
      Run r = tally.run(cases.get(i).toArray(String[]::new));
      assertThat(r.exit()).as(cases.get(i).toString()).isEqualTo(2);
      assertThat(r.out()).as(cases.get(i).toString()).isEmpty();
      String m = messages.get(i);
      if (m.endsWith("...")) { // the rest is the JSON parser's own words
        assertThat(r.err()).as(cases.get(i).toString()).startsWith(m.substring(0, m.length() - 3))
            .contains("(line 1, column ");
      } else {
        assertThat(r.err()).as(cases.get(i).toString()).isEqualTo(m);
      }
    }
    assertThat(tally.keys()).isEmpty();
  }

  @Test
  void aTransactionHoldsAtMostAThousandOperations() {
    String ops = "incr a\n".repeat(1001);
    Run r = tally.withStdin(ops, "tx", "-");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("tally: a transaction holds at most 1000 operations, not 1001\n");
    assertThat(tally.withStdin("incr a\n".repeat(1000), "tx", "-").out()).endsWith("\n1000\n");
  }

  @Test
  void anOperationIdMakesARerunApplyNothing() {
    assertThat(tally.run("tx", "incr a 5", "incr b", "--op-id", "tx-1").out()).isEqualTo("5\n1\n");
    assertThat(tally.run("tx", "incr a 5", "incr b", "--op-id", "tx-1").out()).isEqualTo("5\n1\n");
    assertThat(tally.run("get", "a").out()).isEqualTo("5\n");
    Run other = tally.run("tx", "incr a 6", "--op-id", "tx-1");
    assertThat(other.exit()).isEqualTo(2);
    assertThat(other.err()).contains("already used for a different operation");
  }
}
