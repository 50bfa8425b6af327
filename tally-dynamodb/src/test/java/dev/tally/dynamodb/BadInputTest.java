package dev.tally.dynamodb;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.StoreException;
import dev.tally.StoreUnavailableException;
import dev.tally.Tally;
import dev.tally.spi.LimiterRecord;
import dev.tally.spi.OperationId;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;

/** Names DynamoDB reserves, sizes it refuses, and malformed URIs: handled before any harm. */
class BadInputTest {

  @ParameterizedTest(name = "key attribute \"{0}\"")
  @ValueSource(strings = {"name", "value", "ttl", "key", "size", "count"})
  void reservedWordsWorkAsTheKeyAttribute(String keyAttribute) {
    String uri = Dynalite.tableUri("tally-test-" + keyAttribute, keyAttribute);
    try (Tally tally = Tally.open(uri)) {
      Counters c = tally.counters("reserved-" + UUID.randomUUID());
      assertThat(c.incr("value", 2)).isEqualTo(2);
      assertThat(c.incr("name", 1.5)).isEqualTo(1.5);
      assertThat(c.add("ttl", 7, Duration.ofMinutes(1))).isTrue();
      assertThat(c.touch("ttl", Duration.ofMinutes(2))).isTrue();
      assertThat(c.keys("")).containsExactlyInAnyOrder("value", "name", "ttl");
      assertThat(c.pop("value")).hasValue(2);
      assertThat(c.get("ttl")).hasValue(7);
      RateLimiter l = tally.limiter("reserved-limiter-" + UUID.randomUUID(), Limit.leakyBucket(2, Duration.ofHours(1)));
      assertThat(l.tryAcquire(2)).isTrue();
      assertThat(l.tryAcquire()).isFalse();
    }
  }

  @Test
  void theKeyAttributeCannotBeOneOfTallysAttributes() {
    assertThatThrownBy(() -> Options.parse("dynamodb://t-table?key=v"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("cannot be named 'v'");
    assertThatThrownBy(() -> Options.parse("dynamodb://t-table?key=_ttl"))
        .isInstanceOf(IllegalArgumentException.class);
  }

  @Test
  void aLimiterWhoseStateExceedsTheItemSizeLimitIsRefusedBeforeAnyRequest() {
    RequestCounter requests = new RequestCounter();
    CountingStoreProvider.counter = requests;
    try (Tally tally = Tally.open(Dynalite.uri().replaceFirst("^dynamodb:", "dynamodb-counted:"))) {
      Limit[] limits = new Limit[4_000];
      for (int i = 0; i < limits.length; i++) {
        limits[i] = Limit.tokenBucket(10 + i, Duration.ofMinutes(1));
      }
      RateLimiter huge = tally.limiter("huge-" + UUID.randomUUID(), limits);
      requests.take();
      assertThatThrownBy(huge::tryAcquire)
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("400 KB")
          .hasMessageContaining("4000 limits");
      assertThat(requests.take()).isEmpty();
    }
  }

  @Test
  void valuesBeyondDynamoDbsNumberRangeAreKeptExactly() {
    try (Tally tally = Tally.open(Dynalite.uri())) {
      Counters c = tally.counters("range-" + UUID.randomUUID());
      for (double v : new double[] {Double.MAX_VALUE, -Double.MAX_VALUE, Double.MIN_VALUE, 1e-200, 1e200, -0.0}) {
        c.put("f", v, null);
        assertThat(Double.doubleToRawLongBits(c.getDouble("f").orElseThrow())).as("%s", v)
            .isEqualTo(Double.doubleToRawLongBits(v));
      }
      c.put("g", 1e200, null);
      assertThat(c.incr("g", 1e200)).isEqualTo(2e200);
      assertThat(c.incr("h", 1e300, 1e300)).isEqualTo(2e300);
      assertThat(c.incr("h", -2e300)).isEqualTo(0.0);
      assertThat(c.incr("h", 0.25)).as("back in range: decimal arithmetic again").isEqualTo(0.25);
    }
  }

  @Test
  void floatsBeyondTheRangeAreUpdatedExactlyUnderConcurrency() {
    // What is checked is exactness; how many conflicts a writer tolerates before it gives up
    // (16 by default) is not, and three writers on two loaded cores can lose 16 races in a row.
    try (Tally tally = Tally.open(Dynalite.uri("conflictTries=100"))) {
      Counters c = tally.counters("range-" + UUID.randomUUID());
      double base = Math.scalb(1.0, 700); // about 5e210: kept as text, updated by compare-and-set
      double step = Math.scalb(1.0, 690); // sums of these are exact in binary
      c.put("f", base, null);
      dev.tally.tck.Concurrently.run(3, 15, (t, i) -> c.incr("f", step));
      assertThat(c.getDouble("f")).hasValue(base + 45 * step);
    }
  }

  @Test
  void countersAndLimitersCannotShareAKey() {
    try (Tally tally = Tally.open(Dynalite.uri())) {
      String name = "shared-" + UUID.randomUUID();
      tally.counters().incr(name);
      RateLimiter l = tally.limiter(name, Limit.tokenBucket(5, Duration.ofMinutes(1)));
      assertThatThrownBy(l::tryAcquire).isInstanceOf(dev.tally.WrongKindException.class)
          .hasMessageContaining("holds a counter");
      assertThat(tally.counters().get(name)).hasValue(1);

      String other = "shared-" + UUID.randomUUID();
      assertThat(tally.limiter(other, Limit.tokenBucket(5, Duration.ofMinutes(1))).tryAcquire()).isTrue();
      assertThatThrownBy(() -> tally.counters().incr(other)).isInstanceOf(dev.tally.WrongKindException.class)
          .hasMessageContaining("rate limiter's state");
      assertThatThrownBy(() -> tally.counters().put(other, 1)).isInstanceOf(dev.tally.TallyException.class);
      assertThatThrownBy(() -> tally.counters().delete(other)).isInstanceOf(dev.tally.TallyException.class);
      assertThatThrownBy(() -> tally.counters().get(other)).isInstanceOf(dev.tally.WrongKindException.class);
      assertThatThrownBy(() -> tally.counters().add(other, 1, null)).isInstanceOf(dev.tally.WrongKindException.class);
      assertThat(tally.limiter(other, Limit.tokenBucket(5, Duration.ofMinutes(1))).available()).isEqualTo(4);
    }
  }

  @Test
  void malformedUrisSayWhatAGoodOneLooksLike() {
    assertThatThrownBy(() -> Tally.open("dynamodb://x")).isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("table name").hasMessageContaining("dynamodb://my-table");
    assertThatThrownBy(() -> Tally.open("dynamodb://tally?regoin=us-east-1"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("unknown option 'regoin'");
    assertThatThrownBy(() -> Tally.open("dynamodb://tally?endpoint=localhost:4567"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("http");
    assertThatThrownBy(() -> Tally.open("dynamodb://tally?retries=lots"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retries");
    assertThatThrownBy(() -> Tally.open("dynamodb://tally?accessKey=a"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("secretKey");
    assertThat(Options.parse("dynamodb://tally?accessKey=AK&secretKey=a+b%2Fc%2B").secretKey()).isEqualTo("a+b/c+");
  }

  @Test
  void timeoutsAreCheckedAndTheAttemptFitsInTheCall() {
    assertThatThrownBy(() -> Tally.open("dynamodb://tally?timeout=0"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout=0 must be an integer from 1");
    assertThatThrownBy(() -> Tally.open("dynamodb://tally?timeout=2s"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("timeout=2s");
    assertThatThrownBy(() -> Tally.open("dynamodb://tally?timeout=1000&attemptTimeout=1500"))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("attemptTimeout=1500 is longer than timeout=1000");
    Options defaults = Options.parse("dynamodb://tally");
    assertThat(defaults.timeout()).isEqualTo(Duration.ofSeconds(5));
    assertThat(defaults.attemptTimeout()).isEqualTo(Duration.ofMillis(2500));
    assertThat(Options.parse("dynamodb://tally?timeout=3000").attemptTimeout()).isEqualTo(Duration.ofMillis(1500));
    assertThat(Options.parse("dynamodb://tally?timeout=3000&attemptTimeout=3000").attemptTimeout())
        .isEqualTo(Duration.ofSeconds(3));
  }

  @Test
  void aMissingTableFailsAtOnceSayingHowToCreateIt() {
    String uri = "dynamodb://no-such-table-" + UUID.randomUUID() + "?endpoint=" + Dynalite.endpoint();
    long start = System.nanoTime();
    assertThatThrownBy(() -> Tally.open(uri))
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("does not exist")
        .hasMessageContaining("DynamoDbTables.create");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(5));
  }

  @Test
  void aTableKeyedOtherwiseIsRefusedWithTheOptionToUse() {
    String table = "tally-test-name";
    Dynalite.tableUri(table, "name");
    assertThatThrownBy(() -> Tally.open("dynamodb://" + table + "?endpoint=" + Dynalite.endpoint()))
        .isInstanceOf(IllegalArgumentException.class)
        .hasMessageContaining("key=name");
  }

  @Test
  void createTableIsIdempotent() {
    String uri = "dynamodb://tally-create-" + UUID.randomUUID() + "?endpoint=" + Dynalite.endpoint() + "&key=name";
    assertThat(DynamoDbTables.create(uri)).isTrue();
    assertThat(DynamoDbTables.create(uri)).isFalse();
    try (Tally tally = Tally.open(uri)) {
      assertThat(tally.counters().incr("k")).isEqualTo(1);
    }
  }

  @Test
  void aLimiterStateInAnotherRecordFormatIsRefusedNotMisread() {
    String name = "format-" + UUID.randomUUID();
    try (Tally tally = Tally.open(Dynalite.uri());
        Clients clients = new Clients(Options.parse(Dynalite.uri()), java.util.List.of())) {
      RateLimiter l = tally.limiter(name, Limit.tokenBucket(5, Duration.ofHours(1)));
      assertThat(l.tryAcquire()).isTrue();
      var item = new java.util.HashMap<>(clients.counters.getItem(b -> b.tableName(Dynalite.TABLE)
          .key(java.util.Map.of("key", AttributeValue.fromS(name))).consistentRead(true)).item());
      assertThat(item.get(Items.FORMAT).n()).isEqualTo(Integer.toString(LimiterRecord.VERSION));
      item.put(Items.FORMAT, AttributeValue.fromN(Integer.toString(LimiterRecord.VERSION + 1)));
      item.put(Items.WRITER, AttributeValue.fromN("12345")); // another writer: this store's cache is stale
      clients.counters.putItem(b -> b.tableName(Dynalite.TABLE).item(item));
      assertThatThrownBy(l::tryAcquire).isInstanceOf(StoreException.class)
          .hasMessageContaining("record format " + (LimiterRecord.VERSION + 1))
          .hasMessageContaining("newer Tally");
      assertThat(clients.counters.getItem(b -> b.tableName(Dynalite.TABLE)
          .key(java.util.Map.of("key", AttributeValue.fromS(name))).consistentRead(true)).item())
          .as("nothing written over it").isEqualTo(item);
    }
  }

  @Test
  void aServerWithoutTransactionsIsNamedInTheError() {
    org.junit.jupiter.api.Assumptions.assumeFalse(Dynalite.supportsTransactions(), "the server has transactions");
    try (Tally tally = Tally.open(Dynalite.uri())) {
      assertThatThrownBy(() -> tally.counters("tx-" + UUID.randomUUID()).transaction(tx -> tx.incr("a", 1)))
          .isInstanceOf(UnsupportedOperationException.class)
          .hasMessageContaining("does not implement TransactGetItems, which transactions need")
          .hasMessageNotContaining("null");
    }
  }

  /**
   * Ids live on the item of their key for the retention window; an item holds 400 KB. The write
   * that would take it past is refused, applies nothing, and says why. The item is filled to
   * nearly 400 KB with live records first, written directly.
   */
  @Test
  void idsThatWouldOverfillAnItemAreAClearErrorAndApplyNothing() {
    String group = "full-" + UUID.randomUUID();
    try (Tally tally = Tally.open(Dynalite.uri());
        Clients clients = new Clients(Options.parse(Dynalite.uri()), java.util.List.of())) {
      Counters c = tally.counters(group);
      c.incr("k");
      var item = new java.util.HashMap<String, AttributeValue>();
      item.put("key", AttributeValue.fromS(group + ":k"));
      item.put(Items.VALUE, AttributeValue.fromN("1"));
      String live = Once.pad(Long.MAX_VALUE / 2) + "|0000000000000000|N";
      item.put(Once.MARKER, AttributeValue.fromS(Once.pad(Long.MAX_VALUE / 2) + "|1"));
      for (int i = 0; i < 375; i++) {
        item.put(Once.RECORD_PREFIX + "fill-" + "x".repeat(1000) + i, AttributeValue.fromS(live));
      }
      clients.counters.putItem(b -> b.tableName(Dynalite.TABLE).item(item));
      String prefix = "y".repeat(OperationId.MAX_LENGTH - 10);
      long applied = 1;
      dev.tally.TallyException refused = null;
      for (int i = 0; i < 100 && refused == null; i++) {
        try {
          c.withOperationId(prefix + String.format("%010d", i)).incr("k");
          applied++;
        } catch (dev.tally.TallyException e) {
          refused = e;
        }
      }
      assertThat(refused).as("some id had to be refused").isNotNull();
      assertThat(refused).hasMessageContaining("400 KB").hasMessageContaining("Nothing was applied")
          .hasMessageContaining("operationRetention");
      assertThat(applied).as("ids recorded before the item was full").isGreaterThan(1);
      assertThat(c.get("k")).as("every increment applied, the refused one not").hasValue(applied);
    }
  }
}
