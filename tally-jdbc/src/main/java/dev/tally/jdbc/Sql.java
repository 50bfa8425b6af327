package dev.tally.jdbc;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One SQL statement written with named parameters ({@code :key}, {@code :delta}), as JDBC text
 * with {@code ?} and the order to bind them in.
 *
 * <p>{@code :now} is special: the instant the statement decides expiry at. On the database's
 * clock it becomes {@code statement_timestamp()} in epoch nanoseconds: the server's clock when the
 * statement arrived, the same at every mention within the statement (unlike
 * {@code clock_timestamp()}, which is read anew at each mention: an increment that reset an
 * expired counter in one column while keeping the expiry in another would be a counter born
 * expired), and read afresh for each statement, also inside a transaction. On a supplied clock
 * it is a parameter like the others.
 */
final class Sql {
  /** Epoch nanoseconds of the database's clock when the statement arrived, microsecond-exact. */
  static final String SERVER_NOW = "(extract(epoch FROM statement_timestamp()) * 1000000000)::bigint";
  private static final Pattern PARAM = Pattern.compile("(?<![:\\w]):([a-z][a-zA-Z0-9]*)");

  final String text;
  private final String[] order;

  private Sql(String text, String[] order) {
    this.text = text;
    this.order = order;
  }

  /** {@code template} with {@code ${table}} replaced and {@code :now} on the chosen clock. */
  static Sql of(String template, String table, boolean serverClock) {
    String t = template.replace("${table}", table);
    if (serverClock) {
      t = t.replaceAll("(?<![:\\w]):now\\b", "(" + SERVER_NOW + ")");
    }
    List<String> names = new ArrayList<>();
    Matcher m = PARAM.matcher(t);
    StringBuilder jdbc = new StringBuilder();
    while (m.find()) {
      names.add(m.group(1));
      m.appendReplacement(jdbc, "?");
    }
    m.appendTail(jdbc);
    return new Sql(jdbc.toString(), names.toArray(new String[0]));
  }

  /** Binds {@code values} (by name; {@code now} only on a supplied clock) to {@code ps}. */
  void bind(PreparedStatement ps, Map<String, Object> values) throws SQLException {
    for (int i = 0; i < order.length; i++) {
      String name = order[i];
      if (!values.containsKey(name)) {
        throw new IllegalStateException("no value for :" + name + " in " + text);
      }
      Object v = values.get(name);
      if (v instanceof Long l) {
        ps.setLong(i + 1, l);
      } else if (v instanceof Double d) {
        ps.setDouble(i + 1, d);
      } else if (v instanceof String s) {
        ps.setString(i + 1, s);
      } else if (v == null) {
        ps.setNull(i + 1, java.sql.Types.OTHER); // untyped: the statement's cast or column decides
      } else {
        ps.setObject(i + 1, v);
      }
    }
  }

  @Override
  public String toString() {
    return text;
  }
}
