package dev.tally.jdbc;

import dev.tally.spi.Store;
import dev.tally.spi.StoreContext;
import dev.tally.spi.StoreProvider;
import java.util.Set;

/**
 * Opens PostgreSQL stores: {@code postgresql://user@host:5432/db?table=tally}, or
 * {@code postgresql:?datasource=name} for a DataSource registered with
 * {@link PostgresDataSources}.
 *
 * <pre>{@code
 * try (Tally tally = Tally.open("postgresql://app@db:5432/app?table=tally")) {
 *   tally.counters("views").incr("episode:512");   // one INSERT ... ON CONFLICT ... RETURNING
 * }
 * }</pre>
 *
 * <p>The table must exist: create it with {@code tally schema --store <uri> --apply} or from
 * {@link PostgresSchema#storeDdl}. See docs/postgresql.md.
 */
public final class PostgresStoreProvider implements StoreProvider {

  /** Creates the provider; {@link java.util.ServiceLoader} calls this. */
  public PostgresStoreProvider() {}

  @Override
  public Set<String> schemes() {
    return PostgresSettings.SCHEMES;
  }

  @Override
  public Store open(String uri, StoreContext context) {
    return PostgresStore.open(PostgresSettings.parse(uri), context);
  }
}
