package dev.tally.internal;

import dev.tally.FailurePolicy;
import dev.tally.spi.OperationId;
import dev.tally.spi.AsyncStore;
import dev.tally.spi.Store;
import java.util.ArrayList;
import java.util.List;

/** What a counter group shares: its store, key prefix and failure policy. Immutable. */
record Group(String name, String prefix, FailurePolicy policy, Store store, AsyncStore asyncStore,
    Failures failures) {

  Group withPolicy(FailurePolicy newPolicy) {
    if (newPolicy == null) {
      throw new IllegalArgumentException("failure policy must not be null");
    }
    return new Group(name, prefix, newPolicy, store, asyncStore, failures);
  }

  /** This group seen through an operation id: every mutation carries it. */
  Group withOperationId(String id) {
    OperationId opId = OperationId.of(id);
    return new Group(name, prefix, policy, new OnceStore(store, opId), new OnceStore.Async(asyncStore, opId),
        failures);
  }

  /** Full keys from the store back to keys relative to this group. */
  List<String> stripPrefix(List<String> fullKeys) {
    if (prefix.isEmpty()) {
      return fullKeys;
    }
    List<String> keys = new ArrayList<>(fullKeys.size());
    for (String k : fullKeys) {
      keys.add(k.substring(prefix.length()));
    }
    return keys;
  }
}
