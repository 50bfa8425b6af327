package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.tck.LimiterVectorReplay;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

/**
 * Which blocks of {@code limiter.lua} and of the {@code int64.lua} it requires the limiter vectors
 * reach: the vectors replayed, in a child JVM whose class path finds instrumented copies of both
 * first ({@link LuaCoverage}), on a real Redis that counts each block entered. Run on demand, as it doubles the replay's time:
 *
 * <pre>mvn -B verify -pl tally-redis -Dtally.coverage=true -Dtest=LimiterScriptCoverageTest</pre>
 *
 * It prints the blocks never entered and writes them to {@code target/limiter-lua-coverage.txt}.
 */
@EnabledIfSystemProperty(named = "tally.coverage", matches = "true")
class LimiterScriptCoverageTest {

  @Test
  void vectorsReachTheScriptsBlocks(@TempDir Path dir) throws Exception {
    // every file Script.load puts into limiter.lua's text, each instrumented on its own
    List<LuaCoverage> files = new ArrayList<>();
    for (String name : List.of("int64.lua", "limiter.lua")) {
      LuaCoverage coverage;
      try (InputStream in = LimiterScript.class.getResourceAsStream(name)) {
        coverage = LuaCoverage.instrument(name, new String(in.readAllBytes(), StandardCharsets.UTF_8));
      }
      Path script = dir.resolve("dev/tally/redis/" + name);
      Files.createDirectories(script.getParent());
      Files.writeString(script, coverage.instrumented());
      files.add(coverage);
    }
    assertThat(LimiterScript.SCRIPT.body()).as("limiter.lua is int64.lua and itself")
        .isEqualTo(files.get(0).source() + files.get(1).source());

    RedisServer server = SharedServers.standalone();
    server.call("DEL", LuaCoverage.HASH);
    Process child = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", dir + java.io.File.pathSeparator + System.getProperty("java.class.path"),
        Replay.class.getName(), server.uri()).inheritIO().start();
    assertThat(child.waitFor(15, TimeUnit.MINUTES)).as("the replay ended").isTrue();
    assertThat(child.exitValue()).as("the instrumented script agreed with the machine on every vector").isZero();

    Map<String, String> hits = new LinkedHashMap<>();
    List<?> flat = (List<?>) server.call("HGETALL", LuaCoverage.HASH);
    for (int i = 0; i + 1 < flat.size(); i += 2) {
      hits.put((String) flat.get(i), (String) flat.get(i + 1));
    }
    List<String> report = new ArrayList<>();
    for (LuaCoverage coverage : files) {
      List<String> unreached = coverage.unreached(hits);
      report.add(String.format("%s: %d of %d blocks reached by the vectors; never entered:", coverage.name(),
          coverage.blocks() - unreached.size(), coverage.blocks()));
      unreached.forEach(u -> report.add("  " + u));
    }
    report.forEach(System.out::println);
    Files.write(Path.of("target", "limiter-lua-coverage.txt"), report);
    assertThat(hits).as("the instrumented script counted").isNotEmpty();
  }

  /** The child: the vectors on the Redis given, with whichever limiter.lua and int64.lua its class path finds first. */
  static final class Replay {
    private Replay() {}

    public static void main(String[] args) {
      LimiterVectorReplay.Result r = LimiterVectorsTest.replay(args[0]);
      System.out.println("redis (instrumented limiter.lua): " + r);
      System.exit(r.disagreements() == 0 ? 0 : 1);
    }
  }
}
