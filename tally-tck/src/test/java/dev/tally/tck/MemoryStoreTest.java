package dev.tally.tck;

import dev.tally.Tally;
import java.util.List;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The whole kit against {@code mem:}. Not {@link JointDecisionProcessesContract}: a {@code mem:}
 * store lives in one process, so child JVMs would each decide on a store of their own; its
 * joint decisions from many threads are {@link JointLimiterContract}'s, here.
 */
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
