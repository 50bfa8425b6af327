package dev.tally.tck;

import dev.tally.Counters;
import dev.tally.Tally;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.AfterEach;
import java.lang.reflect.Method;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.InvocationInterceptor;
import org.junit.jupiter.api.extension.ReflectiveInvocationContext;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.opentest4j.TestAbortedException;

/**
 * What every suite of the kit needs from a store: a way to open it on a test clock, and a way
 * to let time pass. A store module extends each suite and implements {@link #open}; a store
 * whose expiry runs on a server clock that cannot be driven (Redis' key expiry) overrides
 * {@link #advance} to sleep.
 *
 * <p>Each test works in a fresh, uniquely named group, so suites can share one server without
 * seeing each other's keys. {@link #counters} is that group.
 */
public abstract class TallyFixture {
  /**
   * Puts the configuration's name in front of every failure, since test reports name a
   * parameterized class's runs by index only: a failure then says where it happened.
   */
  @RegisterExtension
  final InvocationInterceptor configurationInFailures = new InvocationInterceptor() {
    @Override
    public void interceptTestMethod(Invocation<Void> invocation,
        ReflectiveInvocationContext<Method> context, ExtensionContext extension) throws Throwable {
      proceedNamingConfiguration(invocation);
    }

    @Override
    public void interceptTestTemplateMethod(Invocation<Void> invocation,
        ReflectiveInvocationContext<Method> context, ExtensionContext extension) throws Throwable {
      proceedNamingConfiguration(invocation);
    }
  };

  private void proceedNamingConfiguration(InvocationInterceptor.Invocation<Void> invocation) throws Throwable {
    try {
      invocation.proceed();
    } catch (TestAbortedException skipped) {
      throw skipped;
    } catch (Throwable failure) {
      StoreConfiguration c = configuration();
      if (c == null) {
        throw failure;
      }
      AssertionError named = new AssertionError("[" + c.name() + "] " + failure, failure);
      named.setStackTrace(failure.getStackTrace());
      throw named;
    }
  }

  protected ManualTimeSource clock;
  protected Tally tally;
  /** A group unique to this test. */
  protected Counters counters;

  /**
   * The configuration under test, when the suite runs in a {@link ConformanceSuite}; null for a
   * suite that overrides {@link #open} itself.
   */
  protected StoreConfiguration configuration() {
    return null;
  }

  /** Opens the store under test on {@code clock}; a new instance on each call. */
  protected Tally open(ManualTimeSource clock) {
    StoreConfiguration c = configuration();
    if (c == null) {
      throw new IllegalStateException(getClass().getName() + " must run in a ConformanceSuite or"
          + " override open(ManualTimeSource)");
    }
    return c.open(clock);
  }

  /** Lets {@code d} pass for the store: advances the manual clock (and sleeps, if the configuration says so). */
  protected void advance(Duration d) {
    StoreConfiguration c = configuration();
    if (c == null) {
      clock.advance(d);
    } else {
      c.advance(clock, d);
    }
  }

  @BeforeEach
  void openStore() {
    clock = new ManualTimeSource();
    tally = open(clock);
    counters = tally.counters(group(uniqueGroup()));
  }

  /** The name of the group {@link #counters} is, for a unique name. */
  protected String group(String unique) {
    StoreConfiguration c = configuration();
    return c == null ? unique : c.group(unique);
  }

  @AfterEach
  void closeStore() {
    if (tally != null) {
      tally.close();
    }
  }

  /** A group name no other test uses. */
  protected static String uniqueGroup() {
    return "tck-" + UUID.randomUUID().toString().substring(0, 8);
  }
}
