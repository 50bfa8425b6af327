package dev.tally.dynamodb;

import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.util.List;
import java.util.Set;

/**
 * Opens {@code dynamodb://TABLE?...} stores. Found by {@link java.util.ServiceLoader} when
 * tally-dynamodb is on the class path, so users only write the URI:
 *
 * <pre>{@code
 * Tally.open("dynamodb://tally?region=eu-west-1")
 * Tally.open("dynamodb://tally?endpoint=http://localhost:4567")       // a local server
 * Tally.open("dynamodb://buckets?region=us-west-1&key=name&retries=0") // the leaky-bucket table shape
 * }</pre>
 *
 * <table>
 *   <caption>URI options</caption>
 *   <tr><td>{@code region}</td><td>AWS region; default from the environment (us-east-1 with an endpoint)</td></tr>
 *   <tr><td>{@code endpoint}</td><td>a DynamoDB-compatible server, e.g. {@code http://localhost:4567}</td></tr>
 *   <tr><td>{@code key}</td><td>the partition key attribute: {@code key} (default) or e.g. {@code name}</td></tr>
 *   <tr><td>{@code accessKey}, {@code secretKey}</td><td>static credentials; default: the AWS chain</td></tr>
 *   <tr><td>{@code retries}</td><td>retries of counter requests that provably did not apply, or that carry an id (default 3)</td></tr>
 *   <tr><td>{@code retryLost}</td><td>{@code true}: also retry plain requests whose answer was lost, which may count twice (default {@code false})</td></tr>
 *   <tr><td>{@code limiterRetries}</td><td>the same for limiter requests (default 1)</td></tr>
 *   <tr><td>{@code conflictTries}</td><td>conditional writes tried before giving up under contention (default 16)</td></tr>
 *   <tr><td>{@code timeout}</td><td>milliseconds a whole call may take: its requests, retries, backoffs and waits (default 5000)</td></tr>
 *   <tr><td>{@code attemptTimeout}</td><td>milliseconds a request attempt that a retry can follow may take (default half of {@code timeout})</td></tr>
 *   <tr><td>{@code shards}, {@code shardPrefix}</td><td>hot keys: N items per counter, for keys with these prefixes (all if none)</td></tr>
 *   <tr><td>{@code async}</td><td>{@code auto} (default: non-blocking when an async HTTP client is present) or {@code off}</td></tr>
 * </table>
 *
 * The table must exist: create it with {@link DynamoDbTables#create(String)}.
 */
public final class DynamoDbStoreProvider implements StoreProvider {

  @Override
  public Set<String> schemes() {
    return Set.of("dynamodb");
  }

  @Override
  public Store open(String uri, StoreContext context) {
    return DynamoDbStore.open(Options.parse(uri), context, List.of());
  }
}
