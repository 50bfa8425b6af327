package dev.tally.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import dev.tally.tck.LimiterVectorReplay;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

/**
 * Which statements of the schema's PL/pgSQL limiter functions the limiter vectors reach, from
 * plpgsql_check's profiler on a server of its own, and which of its SQL functions are never
 * called ({@code track_functions}; the planner inlines some, which then count as never called).
 * Run on demand: it needs Debian's {@code postgresql-15-plpgsql-check} package.
 *
 * <pre>mvn -B verify -pl tally-jdbc -Dtally.coverage=true -Dtest=LimiterFunctionsCoverageTest</pre>
 *
 * It prints what was never run and writes it to {@code target/schema-sql-coverage.txt}.
 */
@EnabledIfSystemProperty(named = "tally.coverage", matches = "true")
class LimiterFunctionsCoverageTest {

  @Test
  void vectorsReachTheFunctionsStatements() throws Exception {
    PostgresServer server = PostgresServer.start("shared_preload_libraries=plpgsql_check",
        "plpgsql_check.profiler=on", "track_functions=all");
    try {
      server.execute(PostgresSchema.storeDdl("tally"));
      server.execute("CREATE EXTENSION plpgsql_check");
      LimiterVectorReplay.Result r = LimiterVectorsTest.replay(server);
      System.out.println("postgresql (profiled): " + r);
      assertThat(r.disagreements()).as(r.toString()).isZero();

      List<String> report = new ArrayList<>();
      try (Connection c = server.connect(); Statement s = c.createStatement()) {
        List<String[]> functions = new ArrayList<>();
        try (ResultSet rs = s.executeQuery("SELECT p.oid::regprocedure::text, l.lanname, p.prosrc,"
            + " coalesce(f.calls, 0) FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang"
            + " LEFT JOIN pg_stat_user_functions f ON f.funcid = p.oid"
            + " WHERE p.proname LIKE 'tally\\_%' ORDER BY p.proname")) {
          while (rs.next()) {
            functions.add(new String[] {rs.getString(1), rs.getString(2), rs.getString(3), rs.getString(4)});
          }
        }
        assertThat(functions).as("the schema's functions").isNotEmpty();
        for (String[] f : functions) {
          if (!f[1].equals("plpgsql")) {
            report.add(f[0] + " (sql): " + f[3] + " calls");
            continue;
          }
          String[] body = f[2].split("\n", -1);
          int statements = 0;
          List<String> never = new ArrayList<>();
          try (PreparedStatement ps = c.prepareStatement("SELECT lineno, stmtname, exec_stmts"
              + " FROM plpgsql_profiler_function_statements_tb(?::regprocedure) ORDER BY stmtid")) {
            ps.setString(1, f[0]);
            try (ResultSet rs = ps.executeQuery()) {
              while (rs.next()) {
                statements++;
                if (rs.getLong(3) == 0) {
                  int line = rs.getInt(1);
                  String text = line >= 1 && line <= body.length ? body[line - 1].strip() : "";
                  never.add("  body line " + line + " (" + rs.getString(2) + "): " + text);
                }
              }
            }
          }
          report.add(String.format("%s (plpgsql): %d of %d statements run, %s calls",
              f[0], statements - never.size(), statements, f[3]));
          report.addAll(never);
        }
      }
      report.forEach(System.out::println);
      Files.write(Path.of("target", "schema-sql-coverage.txt"), report);
    } finally {
      server.stop();
    }
  }
}
