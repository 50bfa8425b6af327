package dev.tally.dynamodb;

import dev.tally.Tally;
import dev.tally.tck.ConformanceSuite;
import dev.tally.tck.ManualTimeSource;
import dev.tally.tck.StoreConfiguration;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The whole conformance kit against a DynamoDB server (dynalite, see {@link Dynalite}), once per
 * configuration that takes a different code path. The store runs on the kit's manual clock, as
 * every store without a clock of its own does.
 *
 * <ul>
 *   <li>{@value #DEFAULT}: the default URI (lost answers not retried, the async API on
 *       DynamoDbAsyncClient).
 *   <li>{@value #SHARDED}: every counter of the kit sharded over 4 items; the operations a
 *       sharded counter refuses are skipped by {@link ShardedCounterLimits}, saying why.
 *   <li>{@value #RETRY_LOST}: the SDK retries every failure, as the AWS SDK does by default.
 *   <li>{@value #EMULATED}: transactions emulated on dynalite ({@link EmulatedTransactions}), so
 *       the store's transaction requests meet a real expression parser; the blocking client
 *       only, so the async API runs on Tally's executor.
 *   <li>{@value #ASYNC_OFF}: no DynamoDbAsyncClient: Tally runs the blocking calls on its executor.
 * </ul>
 *
 * Every configuration opens the store with a {@link #TIMEOUT} timeout, and all but
 * {@value #RETRY_LOST} (see {@link #configurations()}) can have dynalite frozen under it
 * ({@link Dynalite#FREEZE}) for {@link #FREEZE_FOR}, the kit's server-fault case;
 * they share one dynalite, which is safe since the kit's tests run one at a time. The emulated
 * transactions take it too, and are the one configuration where its joint decisions run (the
 * others have no transactions on dynalite): the emulation is not atomic across a timeout, so a
 * joint decision the freeze cuts short may stay applied to one limiter, which the case's books
 * allow for a failed call. Against a server given by TALLY_DYNAMODB_ENDPOINT nothing can be
 * frozen, and the case is skipped.
 */
@ParameterizedClass(name = "{0}")
@MethodSource("configurations")
@ExtendWith({NeedsTransactions.class, ShardedCounterLimits.class})
class DynamoDbStoreTest extends ConformanceSuite {
  static final String DEFAULT = "dynamodb";
  static final String SHARDED = "dynamodb shards=4";
  static final String RETRY_LOST = "dynamodb retryLost=true";
  static final String EMULATED = "dynamodb emulated transactions";
  static final String ASYNC_OFF = "dynamodb async=off";
  /**
   * The store's timeout in every configuration, the bound the server-fault case holds it to: the
   * default, given explicitly. Every other case of the kit runs under it too, and 2 s proved too
   * short for the concurrency cases on a shared 2-core machine (calls waiting seconds for a turn
   * on a hot limiter); FrozenServerTest holds a 2 s timeout to its bound.
   */
  static final Duration TIMEOUT = Duration.ofMillis(Options.DEFAULT_TIMEOUT_MILLIS);
  /** How long the server-fault case freezes dynalite: past the timeout, so calls do time out. */
  static final Duration FREEZE_FOR = TIMEOUT.plusSeconds(2);
  /**
   * Conditional writes that lose to another writer are tried again up to this many times, not the
   * default 16: the kit's hot-key cases (a greedy instance re-acquiring at once beside a waiter
   * refreshing its ticket, 32 threads on one limiter) lose that often on a loaded two-core machine,
   * most with the emulated transactions, whose steps are slower; giving up is then a
   * StoreTimeoutException the cases take for a failure.
   */
  static final String CONFLICT_TRIES = "conflictTries=64";

  DynamoDbStoreTest(StoreConfiguration configuration) {
    super(configuration);
  }

  static List<StoreConfiguration> configurations() {
    return Stream.of(
        // Each operation is a request to a local server: the concurrency suite runs smaller
        // than on memory, fullest on the default configuration.
        StoreConfiguration.of(DEFAULT, clock -> open(DEFAULT, clock)).operationsPerThread(200),
        StoreConfiguration.of(SHARDED, clock -> open(SHARDED, clock, "shards=4", "shardPrefix=sharded-"))
            .groupNames(g -> "sharded-" + g)
            .operationsPerThread(60),
        StoreConfiguration.of(RETRY_LOST, clock -> open(RETRY_LOST, clock, "retryLost=true")).operationsPerThread(60),
        StoreConfiguration.of(EMULATED, DynamoDbStoreTest::openEmulated).operationsPerThread(60),
        StoreConfiguration.of(ASYNC_OFF, clock -> open(ASYNC_OFF, clock, "async=off")).operationsPerThread(60))
        // Not retryLost=true: there the SDK re-sends an attempt that timed out on the frozen
        // server, and both copies apply once it resumes, so an increment the caller saw fail
        // can count twice. That is what the option trades for fewer errors (docs/dynamodb.md,
        // "Retries"), and what the case rightly refuses.
        .map(c -> Dynalite.freezable() && !c.name().equals(RETRY_LOST)
            ? c.freezable(TIMEOUT, FREEZE_FOR, Dynalite.FREEZE) : c)
        .toList();
  }

  /**
   * A table per configuration: operation ids share one space per table, and every test starts
   * its clock at the same instant, so an id one configuration's test claimed would still be live
   * in another's.
   */
  private static Tally open(String configuration, ManualTimeSource clock, String... options) {
    String[] all = Arrays.copyOf(options, options.length + 2);
    all[options.length] = "timeout=" + TIMEOUT.toMillis();
    all[options.length + 1] = CONFLICT_TRIES;
    return Tally.builder(Dynalite.tableUri(table(configuration), "key", all)).timeSource(clock).build();
  }

  static String table(String configuration) {
    return "tally-test-" + configuration.replaceAll("[^A-Za-z0-9]+", "-");
  }

  static Tally openEmulated(ManualTimeSource clock) {
    // async=off: the emulation wraps the blocking client, so the async API must use it too
    String uri = Dynalite.tableUri(table(EMULATED), "key", "async=off", "timeout=" + TIMEOUT.toMillis(), CONFLICT_TRIES)
        .replaceFirst("^dynamodb:", "dynamodb-txemu:");
    return Tally.builder(uri).timeSource(clock).build();
  }
}
