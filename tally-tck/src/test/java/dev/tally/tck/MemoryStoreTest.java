package dev.tally.tck;

import dev.tally.Tally;
import java.util.List;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/** The whole kit against {@code mem:}. */
@ParameterizedClass(name = "{0}")
@MethodSource("configurations")
class MemoryStoreTest extends ConformanceSuite {
  MemoryStoreTest(StoreConfiguration configuration) {
    super(configuration);
  }

  static List<StoreConfiguration> configurations() {
    return List.of(StoreConfiguration.of("mem", clock -> Tally.builder("mem:").timeSource(clock).build()));
  }
}
