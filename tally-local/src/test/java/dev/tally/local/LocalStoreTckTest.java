package dev.tally.local;

import dev.tally.Tally;
import dev.tally.tck.ConformanceSuite;
import dev.tally.tck.ManualTimeSource;
import dev.tally.tck.StoreConfiguration;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The whole conformance kit against {@code file:}, each test on a store in a fresh directory, in
 * every configuration that takes a code path of its own:
 * <ul>
 *   <li>{@code file}: the defaults ({@code sync=periodic}, a first segment of 16,384 slots);
 *   <li>{@code file sync=always}: every locked write forces its journal images, records and
 *       slots before returning, and lock-free increments force their slot;
 *   <li>{@code file slots=64 (grows)}: a first segment of one page, so the kit's cases fill pages
 *       and make the table grow by segments while they run (lookups and claims across segments);
 *   <li>{@code file sync=none}: nothing forced but at the last close.
 * </ul>
 */
@ParameterizedClass(name = "{0}")
@MethodSource("configurations")
class LocalStoreTckTest extends ConformanceSuite {
  LocalStoreTckTest(StoreConfiguration configuration) {
    super(configuration);
  }

  static List<StoreConfiguration> configurations() {
    return List.of(
        file("file", ""),
        // msync on every write makes the concurrency suite's 2,000 operations a thread take a
        // minute and more on a shared disk; 500 still race every path
        file("file sync=always", "?sync=always").operationsPerThread(500),
        file("file slots=64 (grows)", "?slots=64"),
        file("file sync=none", "?sync=none"));
  }

  private static StoreConfiguration file(String name, String options) {
    return StoreConfiguration.of(name, clock -> Tally.builder("file:" + directoryOf(clock) + options)
        .timeSource(clock).build());
  }

  /** Each test has a clock of its own: a second instance a test opens shares its store, as another process would. */
  private static final Map<ManualTimeSource, Path> DIRECTORIES = Collections.synchronizedMap(new WeakHashMap<>());

  private static Path directoryOf(ManualTimeSource clock) {
    return DIRECTORIES.computeIfAbsent(clock, c -> freshDirectory());
  }

  /** Every store of this run lives under one directory, deleted when the JVM exits. */
  private static final Path ROOT = root();

  private static Path root() {
    try {
      Path root = Files.createTempDirectory("tally-tck-");
      Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteTree(root)));
      return root;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Path freshDirectory() {
    try {
      return Files.createTempDirectory(ROOT, "store-").resolve("tally-data");
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static void deleteTree(Path root) {
    try (var paths = Files.walk(root)) {
      paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
    } catch (IOException | UncheckedIOException e) {
      // a temporary directory: the system cleans it up eventually
    }
  }
}
