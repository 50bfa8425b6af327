package dev.tally.tck;

import org.junit.jupiter.api.Nested;

/**
 * The whole kit for one {@link StoreConfiguration}. A store module runs it over every
 * configuration it has, in the manner of a parameterized class:
 *
 * <pre>{@code
 * @ParameterizedClass(name = "{0}")
 * @MethodSource("configurations")
 * class LocalStoreConformanceTest extends ConformanceSuite {
 *   LocalStoreConformanceTest(StoreConfiguration configuration) {
 *     super(configuration);
 *   }
 *
 *   static List<StoreConfiguration> configurations() { ... }
 * }
 * }</pre>
 *
 * Every suite below runs once per configuration, and each reported name starts with the
 * configuration's. A new contract suite is added here once and reaches every store.
 */
public abstract class ConformanceSuite {
  private final StoreConfiguration configuration;

  protected ConformanceSuite(StoreConfiguration configuration) {
    this.configuration = configuration;
  }

  /** The configuration this instance runs. */
  public StoreConfiguration configuration() {
    return configuration;
  }

  @Nested
  public class Counters extends CounterContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class BoundedCounters extends BoundedCounterContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class SeedExamples extends SeedExamplesContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class Concurrency extends CounterConcurrencyContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class InputValidation extends InputValidationContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class Limiters extends LimiterContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class Charges extends ChargeContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class WarmUp extends WarmUpContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class ConcurrencyLimits extends ConcurrencyLimitContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class Leases extends LeaseContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class Reservations extends ReservationContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class JointLimiters extends JointLimiterContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class OperationIds extends OperationIdContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }

  @Nested
  public class ServerFaults extends ServerFaultContract {
    @Override
    protected StoreConfiguration configuration() {
      return configuration;
    }
  }
}
