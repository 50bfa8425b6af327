package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.lettuce.core.RedisClient;
import io.lettuce.core.RedisCommandExecutionException;
import io.lettuce.core.ScriptOutputType;
import io.lettuce.core.api.StatefulRedisConnection;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** {@link Script}: the files a script requires, put before it, and Lua errors named by file and line. */
class ScriptTest {

  @Test
  void theScriptsThatRequireInt64StartWithIt() throws Exception {
    String int64 = resource("int64.lua");
    for (Script s : new Script[] {LimiterScript.SCRIPT, CounterScript.SCRIPT}) {
      assertThat(s.body()).as(s.name()).isEqualTo(int64 + resource(s.name()));
      assertThat(s.sha()).isEqualTo(HexFormat.of().formatHex(
          MessageDigest.getInstance("SHA-1").digest(s.body().getBytes(StandardCharsets.UTF_8))));
    }
    assertThat(ConcurrencyScript.SCRIPT.body()).isEqualTo(resource("concurrency.lua"));
  }

  @Test
  void aLuaErrorNamesTheFileAndItsOwnLine() throws Exception {
    Script script = Script.load("script-test-error.lua");
    int int64Lines = (int) resource("int64.lua").chars().filter(c -> c == '\n').count();
    RedisClient client = RedisClient.create(SharedServers.standalone().uri());
    try (StatefulRedisConnection<String, String> c = client.connect()) {
      // line 8 of the test script, line 8 + int64Lines of the text Redis runs
      assertThat(failure(ScriptRunner.run(c.async(), script, ScriptOutputType.INTEGER, new String[0], "here")))
          .contains("script-test-error.lua:8:").doesNotContain("user_script:");
      String inInt64 = failure(ScriptRunner.run(c.async(), script, ScriptOutputType.INTEGER, new String[0], "there"));
      int line = Integer.parseInt(inInt64.replaceAll("(?s).*int64\\.lua:(\\d+):.*", "$1"));
      assertThat(line).isBetween(1, int64Lines);
      assertThat(resource("int64.lua").split("\n", -1)[line - 1]).contains("v.m");
    } finally {
      client.shutdown();
    }
  }

  @Test
  void aRequirementThatIsMissingOrCircularIsRefused() {
    assertThatThrownBy(() -> Script.load("script-test-cycle.lua")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("script-test-cycle.lua requires itself");
    assertThatThrownBy(() -> Script.load("no-such-script.lua")).isInstanceOf(IllegalStateException.class)
        .hasMessageContaining("no-such-script.lua is missing");
  }

  private static String failure(CompletableFuture<Object> call) throws Exception {
    try {
      call.get(10, TimeUnit.SECONDS);
    } catch (ExecutionException e) {
      assertThat(e.getCause()).isExactlyInstanceOf(RedisCommandExecutionException.class);
      return e.getCause().getMessage();
    }
    throw new AssertionError("the script did not fail");
  }

  private static String resource(String name) throws IOException {
    try (InputStream in = Script.class.getResourceAsStream(name)) {
      return new String(in.readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}
