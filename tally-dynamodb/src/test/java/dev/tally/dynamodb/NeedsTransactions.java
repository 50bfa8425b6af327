package dev.tally.dynamodb;

import java.lang.reflect.Method;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * Skips the conformance tests that need DynamoDB transactions when the server has none
 * (dynalite implements no TransactGetItems / TransactWriteItems), printing why: transactions,
 * and joint limiter decisions. Everything else
 * in the kit runs. Against a server with transactions, or in the configuration that emulates
 * them, nothing is skipped.
 */
final class NeedsTransactions implements ExecutionCondition {

  /** Test methods that call Counters.transaction and reach the store, by declaring class. */
  private static final Map<String, Set<String>> TESTS = Map.of(
      "Transactions", Set.of("appliesEveryOperationAndReturnsEachResult", "laterOperationsSeeEarlierOnes",
          "aFailingOperationAppliesNone", "overflowAppliesNone", "incrementsKeepExpiryAndRestartExpiredKeys",
          "operationsAfterTheCallbackAreRefused"),
      "Async", Set.of("everyOperationHasTheSameSemantics"),
      "CounterConcurrencyContract", Set.of("transactionsAreNeverSeenHalfApplied",
          "transactionsOnOverlappingKeysDoNotDeadlock"),
      "OperationIdContract", Set.of("aTransactionWithAnIdAppliesOnceAndReplaysItsResults"),
      "BoundedCounterContract", Set.of("aRefusalInATransactionRefusesItAll",
          "boundedIncrementsInATransactionSeeEarlierOperations", "aTransactionKeepsTheRulesOfIncrExisting",
          "concurrentTransactionsTakeFromBothCountersOrNeither"),
      "LimiterContract", Set.of("aTransactionOnALimitersNameIsRefusedAndChangesNothing"),
      // every case: the suite's first step, which asks whether the store decides jointly, reads
      "JointLimiterContract", Set.of("grantedTakesFromEveryLimiter",
          "aRefusalTakesNothingAndNamesTheLimiterThatRefused", "theLimitThatRefusedIsReported",
          "everyAlgorithmTakesPartAndTheScarcestDecides", "zeroPermitsReportEveryStateAndTakeNothing",
          "theAsynchronousFormHasTheSameSemantics", "badInputIsRefusedWithAClearMessage",
          "concurrentDecisionsOnOverlappingKeysTakeAllOrNothing"));

  @Override
  public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
    Method m = context.getTestMethod().orElse(null);
    if (m == null) {
      return ConditionEvaluationResult.enabled("not a test method");
    }
    boolean emulated = DynamoDbStoreTest.EMULATED.equals(ShardedCounterLimits.configuration(context));
    Set<String> names = emulated ? null : TESTS.get(m.getDeclaringClass().getSimpleName());
    if (names == null || !names.contains(m.getName()) || Dynalite.supportsTransactions()) {
      return ConditionEvaluationResult.enabled("needs no transactions, or the server has them");
    }
    String reason = "skipped " + m.getDeclaringClass().getSimpleName() + "." + m.getName()
        + ": the test server (dynalite) implements no TransactWriteItems/TransactGetItems";
    System.out.println("[skip] " + reason);
    return ConditionEvaluationResult.disabled(reason);
  }
}
