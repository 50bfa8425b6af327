package dev.tally.dynamodb;

import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration;
import software.amazon.awssdk.core.exception.ApiCallTimeoutException;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.model.AttributeValue;
import software.amazon.awssdk.services.dynamodb.model.BatchGetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.BatchGetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.CancellationReason;
import software.amazon.awssdk.services.dynamodb.model.ConditionCheck;
import software.amazon.awssdk.services.dynamodb.model.ConditionalCheckFailedException;
import software.amazon.awssdk.services.dynamodb.model.DeleteItemRequest;
import software.amazon.awssdk.services.dynamodb.model.DeleteItemResponse;
import software.amazon.awssdk.services.dynamodb.model.DescribeTableRequest;
import software.amazon.awssdk.services.dynamodb.model.DescribeTableResponse;
import software.amazon.awssdk.services.dynamodb.model.DynamoDbRequest;
import software.amazon.awssdk.services.dynamodb.model.GetItemRequest;
import software.amazon.awssdk.services.dynamodb.model.GetItemResponse;
import software.amazon.awssdk.services.dynamodb.model.ItemResponse;
import software.amazon.awssdk.services.dynamodb.model.PutItemRequest;
import software.amazon.awssdk.services.dynamodb.model.PutItemResponse;
import software.amazon.awssdk.services.dynamodb.model.ScanRequest;
import software.amazon.awssdk.services.dynamodb.model.ScanResponse;
import software.amazon.awssdk.services.dynamodb.model.TransactGetItem;
import software.amazon.awssdk.services.dynamodb.model.TransactGetItemsRequest;
import software.amazon.awssdk.services.dynamodb.model.TransactGetItemsResponse;
import software.amazon.awssdk.services.dynamodb.model.TransactWriteItem;
import software.amazon.awssdk.services.dynamodb.model.TransactWriteItemsRequest;
import software.amazon.awssdk.services.dynamodb.model.TransactWriteItemsResponse;
import software.amazon.awssdk.services.dynamodb.model.TransactionCanceledException;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemRequest;
import software.amazon.awssdk.services.dynamodb.model.UpdateItemResponse;

/**
 * A client that gives dynalite the two transaction operations it lacks, so the store's
 * transaction code runs against a real expression parser: TransactGetItems as consistent
 * GetItems, TransactWriteItems as the conditional writes one by one, undone if one fails, both
 * under one lock that every emulated transaction against the same server takes: a lock in this
 * JVM, then a lock on a file named after the endpoint, so that transactions from several
 * processes (the kit's multi-process joint decisions) are isolated from each other too. The
 * isolation holds between transactions only (plain writes do not take the lock), which is what
 * the kit's transaction tests exercise. Opened as {@code dynamodb-txemu://…}.
 *
 * <p>A transaction keeps to the timeout the store gave its request ({@link Budget}): the wait for
 * the lock and each request sent in its stead share what is left of it, so a frozen server makes
 * it time out as a real transaction would. Unlike a real one, it is not atomic across such a
 * timeout: writes done before it stay, and undoing them needs the server too.
 */
final class EmulatedTransactions implements DynamoDbClient {
  private static final ReentrantLock LOCK = new ReentrantLock(true);
  /** The lock files this JVM opened, by path: a JVM may hold one lock on a file at a time. */
  private static final Map<Path, FileChannel> LOCK_FILES = new ConcurrentHashMap<>();
  /** Each table's key attribute, by table name. */
  private static final Map<String, String> KEY_NAMES = new ConcurrentHashMap<>();
  private final DynamoDbClient d;
  private final FileChannel lockFile;

  EmulatedTransactions(DynamoDbClient delegate, URI endpoint) {
    this.d = delegate;
    String name = "tally-txemu-" + (endpoint == null ? "default" : endpoint.getHost() + "-" + endpoint.getPort())
        + ".lock";
    this.lockFile = LOCK_FILES.computeIfAbsent(Path.of(System.getProperty("java.io.tmpdir"), name), p -> {
      try {
        return FileChannel.open(p, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
    });
  }

  /** The store provider for {@code dynamodb-txemu://}. */
  public static final class Provider implements StoreProvider {
    @Override
    public Set<String> schemes() {
      return Set.of("dynamodb-txemu");
    }

    @Override
    public Store open(String uri, StoreContext context) {
      String plain = "dynamodb" + uri.substring("dynamodb-txemu".length());
      Options options = Options.parse(plain);
      return DynamoDbStore.open(options, context, List.of(), c -> new EmulatedTransactions(c, options.endpoint()));
    }
  }

  @Override
  public TransactGetItemsResponse transactGetItems(TransactGetItemsRequest request) {
    Budget budget = new Budget(request);
    FileLock held = budget.lock(lockFile);
    try {
      List<ItemResponse> out = new ArrayList<>();
      for (TransactGetItem g : request.transactItems()) {
        GetItemResponse r = d.getItem(b -> b.tableName(g.get().tableName()).key(g.get().key()).consistentRead(true)
            .overrideConfiguration(budget.left()));
        out.add(r.hasItem() && !r.item().isEmpty() ? ItemResponse.builder().item(r.item()).build()
            : ItemResponse.builder().build());
      }
      return TransactGetItemsResponse.builder().responses(out).build();
    } finally {
      unlock(held);
    }
  }

  @Override
  public TransactWriteItemsResponse transactWriteItems(TransactWriteItemsRequest request) {
    Budget budget = new Budget(request);
    FileLock held = budget.lock(lockFile);
    try {
      List<Runnable> undo = new ArrayList<>();
      List<TransactWriteItem> items = request.transactItems();
      for (int i = 0; i < items.size(); i++) {
        TransactWriteItem w = items.get(i);
        String table;
        Map<String, AttributeValue> key;
        if (w.put() != null) {
          table = w.put().tableName();
          key = keyOf(table, w.put().item(), budget);
        } else if (w.delete() != null) {
          table = w.delete().tableName();
          key = w.delete().key();
        } else {
          table = w.conditionCheck().tableName();
          key = w.conditionCheck().key();
        }
        GetItemResponse before = d.getItem(b -> b.tableName(table).key(key).consistentRead(true)
            .overrideConfiguration(budget.left()));
        Map<String, AttributeValue> old = before.hasItem() && !before.item().isEmpty() ? before.item() : null;
        try {
          apply(w, old, budget);
        } catch (ConditionalCheckFailedException e) {
          for (int u = undo.size() - 1; u >= 0; u--) {
            undo.get(u).run();
          }
          List<CancellationReason> reasons = new ArrayList<>();
          for (int r = 0; r < items.size(); r++) {
            reasons.add(CancellationReason.builder().code(r == i ? "ConditionalCheckFailed" : "None").build());
          }
          throw TransactionCanceledException.builder().message("Transaction cancelled (emulated)")
              .cancellationReasons(reasons).build();
        }
        undo.add(() -> {
          if (old == null) {
            d.deleteItem(b -> b.tableName(table).key(key).overrideConfiguration(budget.left()));
          } else {
            d.putItem(b -> b.tableName(table).item(old).overrideConfiguration(budget.left()));
          }
        });
      }
      return TransactWriteItemsResponse.builder().build();
    } finally {
      unlock(held);
    }
  }

  private void apply(TransactWriteItem w, Map<String, AttributeValue> old, Budget budget) {
    if (w.put() != null) {
      var p = w.put();
      d.putItem(b -> b.tableName(p.tableName()).item(p.item()).conditionExpression(p.conditionExpression())
          .expressionAttributeNames(p.expressionAttributeNames())
          .expressionAttributeValues(p.hasExpressionAttributeValues() ? p.expressionAttributeValues() : null)
          .overrideConfiguration(budget.left()));
    } else if (w.delete() != null) {
      var x = w.delete();
      d.deleteItem(b -> b.tableName(x.tableName()).key(x.key()).conditionExpression(x.conditionExpression())
          .expressionAttributeNames(x.expressionAttributeNames())
          .expressionAttributeValues(x.hasExpressionAttributeValues() ? x.expressionAttributeValues() : null)
          .overrideConfiguration(budget.left()));
    } else {
      ConditionCheck c = w.conditionCheck();
      // Check by writing back what is there (or deleting nothing) under the same condition.
      if (old == null) {
        d.deleteItem(b -> b.tableName(c.tableName()).key(c.key()).conditionExpression(c.conditionExpression())
            .expressionAttributeNames(c.expressionAttributeNames())
            .expressionAttributeValues(c.hasExpressionAttributeValues() ? c.expressionAttributeValues() : null)
            .overrideConfiguration(budget.left()));
      } else {
        d.putItem(b -> b.tableName(c.tableName()).item(old).conditionExpression(c.conditionExpression())
            .expressionAttributeNames(c.expressionAttributeNames())
            .expressionAttributeValues(c.hasExpressionAttributeValues() ? c.expressionAttributeValues() : null)
            .overrideConfiguration(budget.left()));
      }
    }
  }

  private Map<String, AttributeValue> keyOf(String table, Map<String, AttributeValue> item, Budget budget) {
    // A table's key never changes: asked once, not before every put of every emulated transaction,
    // which all wait behind one lock.
    String keyName = KEY_NAMES.computeIfAbsent(table, t -> d.describeTable(
        b -> b.tableName(t).overrideConfiguration(budget.left())).table().keySchema().get(0).attributeName());
    return Map.of(keyName, item.get(keyName));
  }

  /** What is left of the timeout of the transaction request being emulated. */
  private static final class Budget {
    private final long until;

    Budget(DynamoDbRequest outer) {
      Duration timeout = outer.overrideConfiguration().flatMap(c -> c.apiCallTimeout()).orElse(Duration.ofMinutes(1));
      this.until = System.nanoTime() + timeout.toNanos();
    }

    /** The timeout of the next request sent in the transaction's stead. */
    AwsRequestOverrideConfiguration left() {
      long n = until - System.nanoTime();
      if (n <= 0) {
        throw ApiCallTimeoutException.builder().message("the emulated transaction ran out of time").build();
      }
      return AwsRequestOverrideConfiguration.builder().apiCallTimeout(Duration.ofNanos(n)).build();
    }

    /** Takes this JVM's lock, then {@code file}'s (which other processes take), within the budget. */
    FileLock lock(FileChannel file) {
      try {
        if (LOCK.tryLock(until - System.nanoTime(), TimeUnit.NANOSECONDS)) {
          try {
            for (FileLock l; until - System.nanoTime() > 0; LockSupport.parkNanos(200_000)) {
              if ((l = file.tryLock()) != null) {
                return l;
              }
            }
          } catch (IOException | RuntimeException e) {
            LOCK.unlock();
            throw new IllegalStateException("cannot lock the emulated transactions' lock file", e);
          }
          LOCK.unlock();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      throw ApiCallTimeoutException.builder().message("the emulated transaction waited out its time for the lock").build();
    }
  }

  private static void unlock(FileLock held) {
    try {
      held.release();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } finally {
      LOCK.unlock();
    }
  }

  // ------------------------------------------------------------------ everything else as is

  @Override
  public GetItemResponse getItem(GetItemRequest r) {
    return d.getItem(r);
  }

  @Override
  public PutItemResponse putItem(PutItemRequest r) {
    return d.putItem(r);
  }

  @Override
  public UpdateItemResponse updateItem(UpdateItemRequest r) {
    return d.updateItem(r);
  }

  @Override
  public DeleteItemResponse deleteItem(DeleteItemRequest r) {
    return d.deleteItem(r);
  }

  @Override
  public ScanResponse scan(ScanRequest r) {
    return d.scan(r);
  }

  @Override
  public BatchGetItemResponse batchGetItem(BatchGetItemRequest r) {
    return d.batchGetItem(r);
  }

  @Override
  public DescribeTableResponse describeTable(DescribeTableRequest r) {
    return d.describeTable(r);
  }

  @Override
  public String serviceName() {
    return d.serviceName();
  }

  @Override
  public void close() {
    // the store closes the real client
  }
}
