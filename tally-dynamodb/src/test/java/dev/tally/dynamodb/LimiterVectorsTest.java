package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.Tally;
import dev.tally.tck.LimiterVectorReplay;
import dev.tally.tck.LimiterVectors;
import dev.tally.tck.LimiterVectors.Keeping;
import dev.tally.tck.LimiterVectors.Stored;
import java.math.BigInteger;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/**
 * The DynamoDB store replays the kit's limiter vectors ({@link LimiterVectors}) on dynalite:
 * every decision (joint ones as transactions), and the item each call leaves (the record, a
 * tombstone's empty one, {@code _now} and {@code _exp}), equal to the machine's over what this
 * store keeps.
 */
class LimiterVectorsTest {
  private static final String TABLE = "tally-test-vectors";

  @Test
  void dynamoDbStoreDecidesEveryVectorAsTheMachine() {
    String uri = Dynalite.tableUri(TABLE, "key", "timeout=" + DynamoDbStoreTest.TIMEOUT.toMillis());
    // The vectors' joint decisions are transactions, which dynalite lacks: emulated (EmulatedTransactions)
    // by a blocking client, which the replay, on the blocking SPI, uses anyway.
    String store = Dynalite.tableUri(TABLE, "key", "async=off", "timeout=" + DynamoDbStoreTest.TIMEOUT.toMillis())
        .replaceFirst("^dynamodb:", "dynamodb-txemu:");
    try (Clients clients = new Clients(Options.parse(uri), List.of())) {
      LimiterVectorReplay.Result r = LimiterVectorReplay.replay(LimiterVectors.generate("vectors-", Keeping.DYNAMODB),
          clock -> Tally.builder(store).timeSource(clock).build(),
          key -> stored(clients.counters.getItem(b -> b.tableName(TABLE)
              .key(Map.of("key", AttributeValue.fromS(key))).consistentRead(true)).item()), 4);
      System.out.println("dynamodb: " + r);
      assertThat(r.disagreements()).as(r.toString()).isZero();
      assertThat(r.calls()).isGreaterThanOrEqualTo(100_000);
    }
  }

  private static Stored stored(Map<String, AttributeValue> item) {
    if (item == null || item.isEmpty() || !Items.isLimiter(item)) {
      return null;
    }
    long[] words = Items.record(item);
    return new Stored(Items.longAttr(item, Items.NOW, Long.MIN_VALUE), words == null ? new long[0] : words,
        BigInteger.valueOf(Items.expiresAt(item)));
  }
}
