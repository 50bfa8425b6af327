package dev.tally.dynamodb;

import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.util.List;
import java.util.Set;

/**
 * {@code dynamodb-counted://…}: the DynamoDB store with {@link #counter} watching its requests,
 * so tests can open it through {@code Tally} as users do and still count what it sends.
 */
public final class CountingStoreProvider implements StoreProvider {
  static volatile RequestCounter counter = new RequestCounter();

  @Override
  public Set<String> schemes() {
    return Set.of("dynamodb-counted");
  }

  @Override
  public Store open(String uri, StoreContext context) {
    String plain = "dynamodb" + uri.substring("dynamodb-counted".length());
    return DynamoDbStore.open(Options.parse(plain), context, List.of(counter));
  }
}
