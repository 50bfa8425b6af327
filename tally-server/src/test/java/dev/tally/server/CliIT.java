package dev.tally.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code ./tally} launcher: output and exit codes. Each run is a fresh process, so on
 * {@code mem:} nothing carries over from one command to the next.
 */
class CliIT {
  static final Path LAUNCHER = Path.of(System.getProperty("tally.launcher", "../tally")).toAbsolutePath().normalize();

  record Run(int exit, String out, String err) {
    JsonNode json() {
      try {
        return new ObjectMapper().readTree(out);
      } catch (IOException e) {
        throw new AssertionError("not JSON: " + out, e);
      }
    }
  }

  static Run tally(Map<String, String> env, String... args) throws Exception {
    return tallyIn(null, env, args);
  }

  /** Runs ./tally with {@code dir} as the working directory (where file:./tally-data lives). */
  static Run tallyIn(Path dir, Map<String, String> env, String... args) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(LAUNCHER.toString()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    if (dir != null) {
      pb.directory(dir.toFile());
    }
    pb.environment().remove("TALLY_STORE");
    pb.environment().remove("TALLY_TOKEN");
    pb.environment().putAll(env);
    // Files, not pipes: a pipe being read while the process exits can lose its last bytes.
    Path out = Files.createTempFile("tally-cli", ".out");
    Path err = Files.createTempFile("tally-cli", ".err");
    try {
      Process p = pb.redirectOutput(out.toFile()).redirectError(err.toFile()).start();
      assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
      return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
    } finally {
      Files.deleteIfExists(out);
      Files.deleteIfExists(err);
    }
  }

  static Run tally(String... args) throws Exception {
    return tally(Map.of("TALLY_STORE", "mem:"), args);
  }

  private static String read(java.io.InputStream in) {
    try {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void incrPrintsTheNewValue() throws Exception {
    Run r = tally("incr", "views");
    assertThat(r).isEqualTo(new Run(0, "1\n", ""));
    assertThat(tally("incr", "k", "10", "--default", "5").out()).isEqualTo("15\n");
    assertThat(tally("decr", "k", "--default", "10").out()).isEqualTo("9\n");
    assertThat(tally("incr", "k", "-3").out()).isEqualTo("-3\n");
    assertThat(tally("incr", "k", "0.5").out()).isEqualTo("0.5\n");
  }

  @Test
  void anOperationIdIsPassedToTheStore(@org.junit.jupiter.api.io.TempDir Path dir)
      throws Exception {
    // mem: keeps ids, but lives for one command: the repeat-once semantics are IdempotencyIT's
    assertThat(tally("incr", "paid", "5", "--op-id", "order-1")).isEqualTo(new Run(0, "5\n", ""));
    assertThat(tally("--json", "incr", "paid", "--op-id", "order-1").json().get("value").asLong())
        .isEqualTo(1);
    Run bad = tally("incr", "paid", "--op-id", "bad id");
    assertThat(bad.exit()).isEqualTo(2);
    assertThat(bad.err()).contains("operation id");
    // the file store keeps ids in the file: a repeat from another process counts once
    Map<String, String> file = Map.of("TALLY_STORE", "file:" + dir.resolve("data"));
    assertThat(tally(file, "incr", "paid", "5", "--op-id", "order-1")).isEqualTo(new Run(0, "5\n", ""));
    assertThat(tally(file, "incr", "paid", "5", "--op-id", "order-1")).isEqualTo(new Run(0, "5\n", ""));
    assertThat(tally(file, "get", "paid").out()).isEqualTo("5\n");
  }

  @Test
  void jsonOutputIsTheHttpApiBody() throws Exception {
    Run r = tally("--json", "incr", "views", "2");
    assertThat(r.exit()).isZero();
    assertThat(r.out()).isEqualTo("{\"key\":\"views\",\"value\":2}\n");
    Run missing = tally("get", "nope", "--json");
    assertThat(missing.exit()).isEqualTo(3);
    assertThat(missing.json().get("error").asText()).isEqualTo("not_found");
  }

  @Test
  void theStoreComesFromTheOptionOrTheEnvironment() throws Exception {
    // null: keeps nothing, so incr answers default + delta every time
    assertThat(tally(Map.of("TALLY_STORE", "null:"), "incr", "k", "1", "--default", "10").out()).isEqualTo("11\n");
    assertThat(tally(Map.of(), "--store", "null:", "incr", "k", "--default", "41").out()).isEqualTo("42\n");
    assertThat(tally(Map.of(), "incr", "k", "--store", "null:").out()).isEqualTo("1\n");
    Run bad = tally(Map.of(), "--store", "nosuch:", "incr", "k");
    assertThat(bad.exit()).isEqualTo(2);
    assertThat(bad.err()).contains("unknown store scheme 'nosuch:'");
  }

  @Test
  void missingCountersExit3WithAMessage() throws Exception {
    for (String cmd : new String[] {"get", "del"}) {
      Run r = tally(cmd, "absent");
      assertThat(r.exit()).as(cmd).isEqualTo(3);
      assertThat(r.out()).as(cmd).isEmpty();
      assertThat(r.err()).as(cmd).isEqualTo("tally: counter 'absent' does not exist (or has expired)\n");
    }
    Run mustExist = tally("incr", "absent", "--must-exist");
    assertThat(mustExist.exit()).isEqualTo(3);
  }

  @Test
  void putAddAndTouchAreQuietOrSayWhatHappened() throws Exception {
    assertThat(tally("put", "k", "5", "--ttl", "40d")).isEqualTo(new Run(0, "", ""));
    assertThat(tally("add", "quota:42", "1000", "--ttl", "40d")).isEqualTo(new Run(0, "added\n", ""));
    assertThat(tally("touch", "absent", "--ttl", "1h").exit()).isEqualTo(3);
    Run both = tally("touch", "k");
    assertThat(both.exit()).isEqualTo(2);
    assertThat(both.err()).contains("--ttl DURATION").contains("--never");
  }

  @Test
  void badInputGetsOneLineSayingWhatToTypeInstead() throws Exception {
    Run ttl = tally("put", "k", "5", "--ttl", "40days");
    assertThat(ttl.exit()).isEqualTo(2);
    assertThat(ttl.err()).isEqualTo("tally put: invalid value for option '--ttl': '40days' is not a duration:"
        + " expected a duration like 500ms, 30s, 5m, 40d (see 'tally put --help')\n");
    Run noUnit = tally("put", "k", "5", "--ttl", "40");
    assertThat(noUnit.err()).contains("'40' has no unit: expected a duration like 500ms, 30s, 5m, 40d");
    Run delta = tally("incr", "k", "ten");
    assertThat(delta.exit()).isEqualTo(2);
    assertThat(delta.err()).contains("expected an integer like 5 or -3, or a decimal like 0.5");
    Run typo = tally("icnr", "k");
    assertThat(typo.exit()).isEqualTo(2);
    assertThat(typo.err()).startsWith("tally: unknown command 'icnr'; did you mean 'incr'?");
    assertThat(typo.err().lines()).hasSize(1);
    Run limit = tally("limit", "try", "api", "--token-bucket", "100 per minute");
    assertThat(limit.exit()).isEqualTo(2);
    assertThat(limit.err()).contains("expected a token bucket like 100/1m");
  }

  @Test
  void limitTryExits0WhenAllowedAnd1WhenDenied() throws Exception {
    Run allowed = tally("limit", "try", "api:user:42", "--token-bucket", "100/1m");
    assertThat(allowed).isEqualTo(new Run(0, "allowed remaining=99 limit=100 reset-after=600ms\n", ""));
    Run denied = tally("limit", "try", "api:user:42", "--token-bucket", "100/1m", "--permits", "101");
    assertThat(denied.exit()).isEqualTo(1);
    assertThat(denied.out()).isEqualTo("denied remaining=100 limit=100 retry-after=never reset-after=0s\n");
    Run json = tally("limit", "acquire", "q", "--quota", "10/month@Europe/Paris", "--permits", "3",
        "--max-wait", "1s", "--json");
    assertThat(json.exit()).isZero();
    assertThat(json.json().get("remaining").asLong()).isEqualTo(7);
    // every algorithm's option is accepted (the HTTP tests cover what each one does)
    assertThat(tally("limit", "try", "l", "--leaky-bucket", "100/1m", "--gcra", "15:30/60s",
        "--fixed-window", "100/1h", "--sliding-window", "100/1h").exit()).isZero();
    Run peek = tally("limit", "peek", "l", "--token-bucket", "5/1s", "--token-bucket", "2/1s");
    assertThat(peek.out()).isEqualTo("allowed remaining=2 limit=2 reset-after=0s\n");
  }

  @Test
  void keysListsOnePerLine() throws Exception {
    Run r = tally("keys", "nothing:");
    assertThat(r).isEqualTo(new Run(0, "", ""));
  }

  @Test
  void helpIsEverywhere() throws Exception {
    Run root = tally("--help");
    assertThat(root.exit()).isZero();
    assertThat(root.out()).contains("Usage: tally").contains("Exit codes:").contains("incr").contains("serve");
    for (String[] cmd : new String[][] {{"incr", "--help"}, {"limit", "try", "--help"}, {"serve", "-h"}}) {
      Run r = tally(cmd);
      assertThat(r.exit()).as(String.join(" ", cmd)).isZero();
      assertThat(r.out()).as(String.join(" ", cmd)).contains("Usage: tally");
    }
    assertThat(tally("--version").out()).startsWith("tally ");
  }

  @Test
  void completionWritesABashScript(@TempDir Path dir) throws Exception {
    Run r = tally("completion");
    assertThat(r.exit()).isZero();
    Path script = dir.resolve("tally_completion");
    Files.writeString(script, r.out());
    Process bash = new ProcessBuilder("bash", "-c",
        "source \"$1\" && complete -p tally && COMP_WORDS=(tally inc) COMP_CWORD=1 && _picocli_tally"
            + " && echo \"${COMPREPLY[@]}\"", "bash", script.toString())
        .redirectErrorStream(true).start();
    String out = read(bash.getInputStream());
    assertThat(bash.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(bash.exitValue()).as(out).isZero();
    assertThat(out).contains("complete").contains("incr");
  }

  @Test
  void benchPrintsRateAndPercentiles() throws Exception {
    Run table = tally("bench", "--workload", "incr-many", "--threads", "2", "--duration", "1s", "--warmup", "0s");
    assertThat(table.exit()).as(table.err()).isZero();
    assertThat(table.out().lines().findFirst().orElseThrow())
        .contains("workload").contains("ops/s").contains("p50").contains("p99").contains("p99.9");
    assertThat(table.out()).contains("incr-many").contains("mem");
    assertThat(table.err()).as("stderr is a file here: no progress redraws in it").isEmpty();
    Run json = tally("bench", "--workload", "limiter", "--duration", "1s", "--warmup", "0s", "--json");
    assertThat(json.exit()).isZero();
    JsonNode j = json.json();
    assertThat(j.get("ops").asLong()).isPositive();
    assertThat(j.get("allowed").asLong() + j.get("denied").asLong()).isEqualTo(j.get("ops").asLong());
    assertThat(j.get("latencyNanos").get("p999").asLong()).isPositive();
  }

  @Test
  void benchDrawsProgressOnATerminal() throws Exception {
    Assumptions.assumeTrue(Files.isExecutable(Path.of("/usr/bin/script")), "script(1) gives a terminal");
    // script(1) runs the bench on a pseudo-terminal and copies what it shows to our pipe
    Process p = new ProcessBuilder("/usr/bin/script", "-qec", LAUNCHER + " bench --store mem:"
        + " --duration 2s --warmup 0s", "/dev/null")
        .redirectInput(ProcessBuilder.Redirect.PIPE).redirectErrorStream(true).start();
    p.getOutputStream().close();
    String shown = read(p.getInputStream());
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(shown).contains("\r").contains("incr-one");
  }

  @Test
  void benchWithoutAStoreUsesATemporaryOneAndDeletesIt(@TempDir Path dir) throws Exception {
    Path tmp = Files.createDirectories(dir.resolve("tmp"));
    Path work = Files.createDirectories(dir.resolve("work"));
    for (String workload : new String[] {"incr-one", "incr-many", "limiter"}) {
      Run r = tallyIn(work, Map.of("TALLY_JAVA_OPTS", "-Djava.io.tmpdir=" + tmp), "bench",
          "--workload", workload, "--duration", "300ms", "--warmup", "0s", "--keys", "50");
      assertThat(r.exit()).as(r.err()).isZero();
      assertThat(r.out()).as("a file store, as the default is").contains(workload + " ").contains(" file ");
      try (var left = Files.list(tmp)) {
        assertThat(left).as("the temporary store is gone").isEmpty();
      }
      try (var made = Files.list(work)) {
        assertThat(made).as("./tally-data is not touched").isEmpty();
      }
    }
  }

  @Test
  void benchOnAGivenStoreDeletesItsKeysAndNoOther(@TempDir Path dir) throws Exception {
    Map<String, String> file = Map.of("TALLY_STORE", "file:" + dir.resolve("data"));
    assertThat(tally(file, "put", "bench:one", "7").exit()).isZero(); // a key of the user's
    for (String workload : new String[] {"incr-one", "incr-many", "limiter"}) {
      Run r = tally(file, "bench", "--workload", workload, "--duration", "300ms", "--warmup", "0s",
          "--keys", "50");
      assertThat(r.exit()).as(r.err()).isZero();
      assertThat(r.out()).contains(workload + " ");
      assertThat(tally(file, "keys").out()).as("after " + workload).isEqualTo("bench:one\n");
    }
    assertThat(tally(file, "get", "bench:one").out()).isEqualTo("7\n");
    // given with --store rather than $TALLY_STORE, the same
    Run r = tally(Map.of(), "--store", "file:" + dir.resolve("data"), "bench", "--duration", "300ms",
        "--warmup", "0s");
    assertThat(r.out()).contains(" file ");
    assertThat(tally(file, "keys").out()).isEqualTo("bench:one\n");
  }

  @Test
  void benchStoppedBySigtermPrintsWhatItMeasuredAndStillCleansUp(@TempDir Path dir)
      throws Exception {
    Path tmp = Files.createDirectories(dir.resolve("tmp"));
    Path out = dir.resolve("out");
    ProcessBuilder pb = new ProcessBuilder(LAUNCHER.toString(), "bench", "--duration", "10m",
        "--warmup", "0s").directory(Files.createDirectories(dir.resolve("work")).toFile())
        .redirectErrorStream(true).redirectOutput(out.toFile());
    pb.environment().remove("TALLY_STORE");
    pb.environment().put("TALLY_JAVA_OPTS", "-Djava.io.tmpdir=" + tmp);
    Process bench = pb.start();
    try {
      // measuring once its store file exists
      for (int i = 0; i < 600 && !hasStoreFile(tmp); i++) {
        assertThat(bench.isAlive()).as(Files.readString(out)).isTrue();
        Thread.sleep(100);
      }
      assertThat(hasStoreFile(tmp)).as("the bench opened its temporary store").isTrue();
    } finally {
      bench.destroy(); // SIGTERM
    }
    assertThat(bench.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(Files.readString(out)).contains("workload").contains("incr-one");
    try (var left = Files.list(tmp)) {
      assertThat(left).as("the temporary store is gone").isEmpty();
    }
  }

  private static boolean hasStoreFile(Path tmp) throws IOException {
    try (var dirs = Files.list(tmp)) {
      return dirs.anyMatch(d -> Files.exists(d.resolve("store.tally")));
    }
  }

  @Test
  void aDashReadsKeysFromAPipe(@TempDir Path dir) throws Exception {
    Process p = new ProcessBuilder("bash", "-c", "printf 'views\\nviews\\n' | \"$0\" incr -"
        + " && \"$0\" keys", LAUNCHER.toString()).directory(dir.toFile()).redirectErrorStream(true)
        .start();
    String shown = read(p.getInputStream());
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).isTrue();
    assertThat(shown).isEqualTo("1\n2\nviews\n");
  }

  @Test
  void theDefaultStoreIsTheFileStoreSharedByEveryCommand(@TempDir Path dir) throws Exception {
    assertThat(tallyIn(dir, Map.of(), "incr", "views").out()).isEqualTo("1\n");
    assertThat(tallyIn(dir, Map.of(), "incr", "views", "10").out()).isEqualTo("11\n");
    assertThat(tallyIn(dir, Map.of(), "put", "other", "5", "--ttl", "1h").exit()).isZero();
    assertThat(tallyIn(dir, Map.of(), "keys").out()).isEqualTo("other\nviews\n");
    assertThat(tallyIn(dir, Map.of(), "ttl", "other").out()).matches("(1h|59m\\d{1,2}s)\n");
    assertThat(tallyIn(dir, Map.of(), "pop", "views").out()).isEqualTo("11\n");
    assertThat(tallyIn(dir, Map.of(), "get", "views").exit()).isEqualTo(3);
    assertThat(Files.exists(dir.resolve("tally-data").resolve("store.tally"))).isTrue();
  }

  @Test
  void everyCommandDrawsFromTheSameLimiterOnTheFileStore(@TempDir Path dir) throws Exception {
    Run first = tallyIn(dir, Map.of(), "limit", "try", "mail:42", "--token-bucket", "2/1h");
    assertThat(first).isEqualTo(new Run(0, "allowed remaining=1 limit=2 reset-after=30m\n", ""));
    assertThat(tallyIn(dir, Map.of(), "limit", "try", "mail:42", "--token-bucket", "2/1h").exit()).isZero();
    Run third = tallyIn(dir, Map.of(), "limit", "try", "mail:42", "--token-bucket", "2/1h");
    assertThat(third.exit()).isEqualTo(1);
    assertThat(third.out()).matches("denied remaining=0 limit=2 retry-after=(30m|29m\\d+s) reset-after=(1h|59m\\d+s)\n");
  }

  @Test
  void aServerAndTheCommandLineShareTheFileStore(@TempDir Path dir) throws Exception {
    Path out = dir.resolve("serve.out");
    Process serve = new ProcessBuilder(LAUNCHER.toString(), "serve", "--port", "0")
        .directory(dir.toFile()).redirectOutput(out.toFile()).redirectError(dir.resolve("serve.err").toFile())
        .start();
    try {
      String url = null;
      for (int i = 0; i < 300 && url == null; i++) {
        url = Files.readAllLines(out).stream().filter(l -> l.startsWith("listening on "))
            .map(l -> l.substring("listening on ".length())).findFirst().orElse(null);
        if (url == null) {
          assertThat(serve.isAlive()).as(Files.readString(dir.resolve("serve.err"))).isTrue();
          Thread.sleep(100);
        }
      }
      assertThat(url).as("the server printed its address").isNotNull();
      assertThat(tallyIn(dir, Map.of(), "incr", "views", "41").out()).isEqualTo("41\n");
      java.net.http.HttpResponse<String> r = java.net.http.HttpClient.newHttpClient().send(
          java.net.http.HttpRequest.newBuilder(java.net.URI.create(url + "/v1/counters/views/incr"))
              .POST(java.net.http.HttpRequest.BodyPublishers.noBody()).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString());
      assertThat(r.body()).isEqualTo("{\"key\":\"views\",\"value\":42}");
      assertThat(tallyIn(dir, Map.of(), "get", "views").out()).isEqualTo("42\n");
    } finally {
      serve.destroy();
      assertThat(serve.waitFor(20, TimeUnit.SECONDS)).isTrue();
    }
  }

  @Test
  void serveRefusesAnExposedAddressWithoutAToken() throws Exception {
    Map<String, String> env = new HashMap<>();
    env.put("TALLY_STORE", "mem:");
    Run r = tally(env, "serve", "--bind", "0.0.0.0", "--port", "0");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).contains("needs a bearer token");
  }
}
