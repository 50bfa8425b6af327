package dev.tally.dynamodb;

import dev.tally.tck.ConformanceSuite;
import java.lang.reflect.Method;
import java.util.Map;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;
import org.opentest4j.TestAbortedException;

/**
 * What sharded counters do not do, by design (docs/dynamodb.md, "Hot keys"), in the sharded
 * configuration only: a test that calls an operation they refuse (put, add, ttls, touch, floating
 * increments, a default other than 0, incrExisting, transactions) is aborted when the refusal
 * comes, printing why, and the tests that need distinct values from concurrent increments (a
 * sharded increment returns the sum read after its write) are skipped. Every other failure fails.
 */
final class ShardedCounterLimits implements ExecutionCondition, TestExecutionExceptionHandler {
  /** Tests, as Class.method of their declaring class, that need increments to return distinct values. */
  static final Map<String, String> DISTINCT_VALUES = Map.of(
      "CounterConcurrencyContract.incrementsReturnDistinctValues", "distinct values from concurrent increments",
      "SeedExamplesContract.everyHundredCallsRunsTheFunctionExactlyOncePerHundred",
      "distinct values from concurrent increments (each hundredth value runs the function)");

  private static final String REFUSAL = "is a sharded counter, which does not support";

  /** The name of the configuration a test runs in, or null outside the matrix. */
  static String configuration(ExtensionContext context) {
    return context.getTestInstances()
        .flatMap(i -> i.getAllInstances().stream().filter(ConformanceSuite.class::isInstance).findFirst())
        .map(s -> ((ConformanceSuite) s).configuration().name())
        .orElse(null);
  }

  private static boolean sharded(ExtensionContext context) {
    return DynamoDbStoreTest.SHARDED.equals(configuration(context));
  }

  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    Method m = context.getTestMethod().orElse(null);
    if (m == null || !sharded(context)) {
      return ConditionEvaluationResult.enabled("not a sharded test");
    }
    String needs = DISTINCT_VALUES.get(m.getDeclaringClass().getSimpleName() + "." + m.getName());
    if (needs == null) {
      return ConditionEvaluationResult.enabled("sharded counters support what it uses");
    }
    String reason = "skipped " + m.getName() + " on sharded counters: it needs " + needs
        + ", which a sharded counter does not give";
    System.out.println("[skip] " + reason);
    return ConditionEvaluationResult.disabled(reason);
  }

  @Override
  public void handleTestExecutionException(ExtensionContext context, Throwable failure) throws Throwable {
    if (sharded(context)) {
      for (Throwable c = failure; c != null; c = c.getCause()) {
        // The refusal itself, or an assertion that expected another exception and names it.
        if (String.valueOf(c.getMessage()).contains("UnsupportedOperationException") && String.valueOf(c.getMessage()).contains(REFUSAL)
            || c instanceof UnsupportedOperationException && String.valueOf(c.getMessage()).contains(REFUSAL)) {
          String reason = "aborted " + context.getRequiredTestMethod().getName() + " on sharded counters: "
              + c.getMessage();
          System.out.println("[skip] " + reason);
          throw new TestAbortedException(reason, failure);
        }
      }
    }
    throw failure;
  }
}
