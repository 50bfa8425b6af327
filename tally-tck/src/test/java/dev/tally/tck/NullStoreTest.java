package dev.tally.tck;

import dev.tally.Tally;
import org.junit.jupiter.api.Nested;

/**
 * The kit against {@code null:}: the suites that apply to a store that keeps nothing. The
 * value-keeping suites are replaced, by design, by {@link NullStoreContract}.
 */
class NullStoreTest {

  static Tally openNull(ManualTimeSource clock) {
    return Tally.builder("null:").timeSource(clock).build();
  }

  @Nested
  class NullSemantics extends NullStoreContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openNull(clock);
    }
  }

  @Nested
  class InputValidation extends InputValidationContract {
    @Override
    protected Tally open(ManualTimeSource clock) {
      return openNull(clock);
    }
  }
}
