package dev.tally.jdbc;

import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * Binds one flushed count to the user's own statement, e.g. for
 * {@code UPDATE episodes SET views = views + ? WHERE id = ?}:
 *
 * <pre>{@code
 * (ps, key, count) -> {
 *   ps.setLong(1, count);
 *   ps.setLong(2, Long.parseLong(key.substring("views:episode:".length())));
 * }
 * }</pre>
 *
 * The statement runs inside the flush's transaction: it must not commit, roll back or change
 * the connection's settings.
 */
@FunctionalInterface
public interface FlushStatement {

  /** Sets the parameters of {@code ps} for {@code count} units counted under {@code key}. */
  void bind(PreparedStatement ps, String key, long count) throws SQLException;
}
