package dev.tally.dynamodb;

import java.util.List;

/**
 * Creates the table a {@code dynamodb:} store keeps its counters and limiters in.
 *
 * <pre>{@code
 * DynamoDbTables.create("dynamodb://tally?region=eu-west-1");   // once, e.g. at deployment
 * try (Tally tally = Tally.open("dynamodb://tally?region=eu-west-1")) { ... }
 * }</pre>
 *
 * The table has one string partition key (named by the URI's {@code key} option, {@code key}
 * by default), on-demand billing, and TTL deletion on {@code _ttl}. {@code docs/dynamodb.md}
 * has the same definition as CloudFormation.
 */
public final class DynamoDbTables {
  private DynamoDbTables() {}

  /**
   * Creates the table named by {@code uri} unless it exists, and waits until it is ACTIVE.
   *
   * @return true if it was created, false if it existed already (with the expected key)
   * @throws IllegalArgumentException if the URI is malformed or the existing table is keyed
   *     differently
   * @throws dev.tally.StoreException if DynamoDB cannot be reached or refuses
   */
  public static boolean create(String uri) {
    Options o = Options.parse(uri);
    try (Clients clients = new Clients(o, List.of())) {
      return Tables.create(clients.counters, o);
    }
  }
}
