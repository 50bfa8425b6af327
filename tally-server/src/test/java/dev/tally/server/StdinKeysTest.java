package dev.tally.server;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.server.InProcess.Run;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code -} as a key or limiter name: the lines of stdin, checked before anything changes. */
class StdinKeysTest {
  @TempDir
  Path dir;
  InProcess tally;

  @BeforeEach
  void store() {
    tally = new InProcess(dir);
  }

  @Test
  void aDashReadsOneKeyPerLineAndRunsTheCommandOnEach() {
    assertThat(tally.withStdin("a\nb\nb\n", "incr", "-", "5"))
        .isEqualTo(new Run(0, "5\n5\n10\n", ""));
    assertThat(tally.keys()).isEqualTo("a\nb\n"); // no key named '-'
    assertThat(tally.withStdin("a\nb", "get", "-")).isEqualTo(new Run(0, "5\n10\n", ""));
  }

  @Test
  void everyCommandTakingAKeyReadsThemSo() {
    assertThat(tally.withStdin("a\nb\n", "put", "-", "7", "--ttl", "1h").exit()).isZero();
    assertThat(tally.withStdin("a\nb\n", "add", "-", "1")).isEqualTo(new Run(1, "exists\nexists\n", ""));
    assertThat(tally.withStdin("a\nb\n", "touch", "-", "--never").exit()).isZero();
    assertThat(tally.withStdin("a\nb\n", "ttl", "-").out()).isEqualTo("never\nnever\n");
    assertThat(tally.withStdin("a\nb\n", "decr", "-", "2").out()).isEqualTo("5\n5\n");
    assertThat(tally.withStdin("a\n", "pop", "-").out()).isEqualTo("5\n");
    assertThat(tally.withStdin("b\n", "del", "-").exit()).isZero();
    assertThat(tally.keys()).isEmpty();
  }

  @Test
  void windowsLineEndsAreLineEnds() {
    assertThat(tally.withStdin("a\r\nb\r\n", "incr", "-").out()).isEqualTo("1\n1\n");
    assertThat(tally.keys()).isEqualTo("a\nb\n");
  }

  @Test
  void aKeyNamedDashComesAfterTheEndOfOptions() {
    assertThat(tally.run("incr", "--", "-")).isEqualTo(new Run(0, "1\n", ""));
    assertThat(tally.withStdin("a\n", "incr", "--", "-")).isEqualTo(new Run(0, "2\n", ""));
    assertThat(tally.keys()).isEqualTo("-\n");
    assertThat(tally.run("get", "--", "-").out()).isEqualTo("2\n");
  }

  @Test
  void emptyStdinIsRefusedWithHowToGiveKeys() {
    Run r = tally.withStdin("", "incr", "-");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.out()).isEmpty();
    assertThat(r.err()).isEqualTo("tally: no keys on stdin: '-' reads one key per line (echo views"
        + " | tally incr -); for a key named '-', put -- before it (tally incr -- -)\n");
    assertThat(tally.keys()).isEmpty();
  }

  @Test
  void aBadLineAnywhereChangesNothing() {
    Run empty = tally.withStdin("a\n\nb\n", "incr", "-");
    assertThat(empty.exit()).isEqualTo(2);
    assertThat(empty.err()).isEqualTo("tally: stdin line 2 is empty: give one key per line\n");
    byte[] notUtf8 = {'a', '\n', 'b', (byte) 0xff, '\n'};
    Run bytes = tally.withStdin(notUtf8, "incr", "-");
    assertThat(bytes.exit()).isEqualTo(2);
    assertThat(bytes.err()).contains("stdin line 2 is not valid UTF-8");
    Run tooLong = tally.withStdin("a\n" + "k".repeat(1025) + "\n", "incr", "-");
    assertThat(tooLong.exit()).isEqualTo(2);
    assertThat(tooLong.err()).contains("stdin line 2: key 'kkkk").contains("is 1025 bytes in UTF-8;"
        + " the limit is 1024");
    assertThat(tally.keys()).as("line 1 was valid, but nothing ran").isEmpty();
  }

  @Test
  void aKeysOwnOutcomeDoesNotStopTheNextAndSetsTheExitCode() {
    tally.run("put", "a", "1");
    tally.run("put", "c", "3");
    Run r = tally.withStdin("a\nnothing\nc\n", "get", "-");
    assertThat(r).isEqualTo(new Run(3, "1\n3\n",
        "tally: counter 'nothing' does not exist (or has expired)\n"));
    Run must = tally.withStdin("x\na\n", "incr", "-", "--must-exist");
    assertThat(must.exit()).isEqualTo(3);
    assertThat(must.out()).isEqualTo("2\n");
  }

  @Test
  void aFailureEveryKeyWouldMeetStopsAtTheFirst() {
    Run r = tally.withStdin("a\nb\n", "incr", "-", "0.5", "--must-exist");
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("tally: mustExist works with integer deltas only\n");
  }

  @Test
  void withJsonEachKeyGetsItsOwnBody() {
    assertThat(tally.withStdin("a\nb\n", "--json", "incr", "-").out())
        .isEqualTo("{\"key\":\"a\",\"value\":1}\n{\"key\":\"b\",\"value\":1}\n");
  }

  @Test
  void anOperationIdGivesLineNItsOwnIdSoARerunReplays() {
    assertThat(tally.withStdin("a\nb\na\n", "incr", "-", "5", "--op-id", "batch-7").out())
        .isEqualTo("5\n5\n10\n");
    assertThat(tally.withStdin("a\nb\na\n", "incr", "-", "5", "--op-id", "batch-7").out())
        .as("the same input again: each line answers as the first run, nothing applied")
        .isEqualTo("5\n5\n10\n");
    assertThat(tally.run("get", "a").out()).isEqualTo("10\n");
    // line 1 carried batch-7/1: the same operation under that id replays its answer
    assertThat(tally.run("incr", "a", "5", "--op-id", "batch-7/1").out()).isEqualTo("5\n");
    assertThat(tally.run("get", "a").out()).isEqualTo("10\n");
  }

  @Test
  void anOperationIdWithNoRoomForTheLineNumberChangesNothing() {
    Run r = tally.withStdin("a\nb\n", "incr", "-", "--op-id", "x".repeat(127));
    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).isEqualTo("tally: --op-id with '-' gets /N appended for line N (here up to"
        + " /2), so it must be at most 126 characters, not 127\n");
    assertThat(tally.keys()).isEmpty();
  }

  @Test
  void limiterNamesComeFromStdinToo() {
    Run r = tally.withStdin("api:1\napi:1\napi:2\n", "limit", "try", "-", "--token-bucket", "1/1h");
    assertThat(r.exit()).as("the second was denied").isEqualTo(1);
    assertThat(r.out().lines()).hasSize(3);
    assertThat(r.out().lines().toList().get(0)).startsWith("allowed remaining=0 limit=1");
    assertThat(r.out().lines().toList().get(1)).startsWith("denied remaining=0 limit=1");
    assertThat(r.out().lines().toList().get(2)).startsWith("allowed remaining=0 limit=1");
  }

  @Test
  void aPrefixIsNotAKey() {
    tally.run("incr", "--", "-x");
    assertThat(tally.withStdin("ignored\n", "keys", "-").out()).isEqualTo("-x\n");
  }
}
