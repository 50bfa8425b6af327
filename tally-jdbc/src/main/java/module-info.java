/**
 * The PostgreSQL store ({@code postgresql:}) and the exactly-once flush of counts from any store
 * into SQL tables ({@link dev.tally.jdbc.Flush}).
 */
module dev.tally.jdbc {
  requires transitive dev.tally; // its types are in this API
  requires transitive java.sql; // DataSource, PreparedStatement in Flush and PostgresDataSources
  requires com.zaxxer.hikari;
  requires org.postgresql.jdbc; // the driver HikariCP loads for postgresql:// URLs

  exports dev.tally.jdbc; // Flush, PostgresSchema, PostgresDataSources

  provides dev.tally.spi.StoreProvider with dev.tally.jdbc.PostgresStoreProvider;
}
