/** The conformance kit: the contract every store passes, as JUnit 5 suites. */
module dev.tally.tck {
  requires transitive dev.tally;
  requires transitive org.junit.jupiter.api;
  requires transitive org.junit.jupiter.params;
  requires org.assertj.core;

  exports dev.tally.tck;
  opens dev.tally.tck to org.junit.platform.commons;
}
