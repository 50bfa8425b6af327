package dev.tally.server.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.FailurePolicy;
import org.junit.jupiter.api.Test;

class FailurePoliciesTest {
  @Test
  void oneWordKeepsItsMeaningForBothGroups() {
    assertThat(FailurePolicies.parse("fail-open"))
        .isEqualTo(new FailurePolicies(FailurePolicy.FAIL_OPEN, FailurePolicy.FAIL_OPEN));
    assertThat(FailurePolicies.parse("fail-closed")).as("counters have no deny: they throw, as before")
        .isEqualTo(new FailurePolicies(FailurePolicy.FAIL_CLOSED, FailurePolicy.THROW));
    assertThat(FailurePolicies.parse("throw")).isEqualTo(FailurePolicies.both(FailurePolicy.THROW));
  }

  @Test
  void eachGroupItsOwnAndAGroupLeftOutThrows() {
    assertThat(FailurePolicies.parse("limiters=fail-open,counters=throw"))
        .isEqualTo(new FailurePolicies(FailurePolicy.FAIL_OPEN, FailurePolicy.THROW));
    assertThat(FailurePolicies.parse("counters=fail-open, limiters=fail-closed"))
        .isEqualTo(new FailurePolicies(FailurePolicy.FAIL_CLOSED, FailurePolicy.FAIL_OPEN));
    assertThat(FailurePolicies.parse("counters=fail-open"))
        .isEqualTo(new FailurePolicies(FailurePolicy.THROW, FailurePolicy.FAIL_OPEN));
  }

  @Test
  void badTextsSayWhatIsWrong() {
    assertThatThrownBy(() -> FailurePolicies.parse("limiters=fail-open,counters=fail-closed"))
        .hasMessageContaining("counters cannot fail closed");
    assertThatThrownBy(() -> FailurePolicies.parse("gauges=throw")).hasMessageContaining("groups: limiters, counters");
    assertThatThrownBy(() -> FailurePolicies.parse("limiters=open")).hasMessageContaining("'open' is not a failure policy");
    assertThatThrownBy(() -> FailurePolicies.parse("limiters=throw,limiters=fail-open")).hasMessageContaining("twice");
  }
}
