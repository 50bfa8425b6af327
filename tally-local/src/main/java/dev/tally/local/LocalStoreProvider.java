package dev.tally.local;

import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.util.Set;

/**
 * Opens the embedded file store, {@code file:}: counters and rate limiters in a memory-mapped
 * file shared by every process on the host that opens the same path, durable across
 * {@code kill -9}.
 *
 * <pre>{@code
 * try (Tally tally = Tally.open("file:./tally-data")) {          // a directory, created if missing
 *   tally.counters().incr("views:episode:512");
 * }
 * Tally.open("file:/var/lib/app/tally-data?sync=always");          // force to disk before returning
 * }</pre>
 *
 * <p>Options: {@code sync=periodic} (the default: flushed every 100 ms, like Redis'
 * {@code appendfsync everysec}), {@code sync=always} (flushed before each write returns) or
 * {@code sync=none} (left to the kernel); {@code slots=N} sizes the first table segment of a new
 * file; {@code mode=600} (the default: the owner only) sets the permissions of a new file, e.g.
 * {@code mode=660} to share it with a group. Expiry runs on the {@code Tally} builder's time source. The format, the lock protocol and
 * what survives which crash are described in {@code docs/local-store.md}.
 */
public final class LocalStoreProvider implements StoreProvider {

  /** For {@link java.util.ServiceLoader}. */
  public LocalStoreProvider() {}

  @Override
  public Set<String> schemes() {
    return Set.of("file");
  }

  @Override
  public Store open(String uri, StoreContext context) {
    return new LocalStore(LocalOptions.parse(uri), context.timeSource());
  }
}
