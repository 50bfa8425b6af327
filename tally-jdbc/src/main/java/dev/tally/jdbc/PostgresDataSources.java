package dev.tally.jdbc;

import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import javax.sql.DataSource;

/**
 * DataSources an application already has (a Spring pool, an application server's), by name, so
 * that a store URI can use one instead of opening a pool of its own:
 *
 * <pre>{@code
 * PostgresDataSources.register("main", dataSource);
 * try (Tally tally = Tally.open("postgresql:?datasource=main&table=tally")) { ... }
 * }</pre>
 *
 * The store borrows the DataSource and never closes it. Its connections must be in auto-commit
 * mode when handed out (every pool's default).
 */
public final class PostgresDataSources {
  private static final ConcurrentHashMap<String, DataSource> REGISTERED = new ConcurrentHashMap<>();

  private PostgresDataSources() {}

  /** Makes {@code dataSource} available to URIs with {@code datasource=name}, replacing any. */
  public static void register(String name, DataSource dataSource) {
    if (name == null || name.isEmpty() || !name.matches("[A-Za-z0-9_.-]+")) {
      throw new IllegalArgumentException("a DataSource name is letters, digits, '_', '.' or '-', not '" + name + "'");
    }
    REGISTERED.put(name, Objects.requireNonNull(dataSource, "dataSource"));
  }

  /** Forgets a name; stores already open keep their DataSource. */
  public static void unregister(String name) {
    REGISTERED.remove(name);
  }

  static DataSource lookup(String name) {
    DataSource ds = REGISTERED.get(name);
    if (ds == null) {
      throw new IllegalArgumentException("no DataSource is registered as '" + name + "'; call"
          + " PostgresDataSources.register(\"" + name + "\", dataSource) before opening the store"
          + (REGISTERED.isEmpty() ? "" : " (registered: " + new java.util.TreeSet<>(REGISTERED.keySet()) + ")"));
    }
    return ds;
  }
}
