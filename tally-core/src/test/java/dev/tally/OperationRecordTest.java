package dev.tally;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.spi.OperationRecord;
import org.junit.jupiter.api.Test;

/** The text form of a recorded decision: each limit's state round-trips, the older form is read. */
class OperationRecordTest {

  @Test
  void aDecisionOfSeveralLimitsKeepsEachLimitsState() {
    Decision d = new Decision(false, 0, 5, 7_000, 60_000, 0, new long[] {0, 5, 60_000, 97, 100, 40_000});
    OperationRecord r = new OperationRecord(0xabcL, d);
    assertThat(r.encode()).isEqualTo("0000000000000abc|Q0,0,5,7000,60000,0,2,0,5,60000,97,100,40000");
    Decision back = (Decision) OperationRecord.decode(r.encode()).result();
    assertThat(back).isEqualTo(d);
    assertThat(back.limits()).isEqualTo(d.limits());
  }

  @Test
  void aDecisionOfOneLimitIsWrittenAndReadInTheSixFieldForm() {
    Decision d = new Decision(true, 4, 5, 0, 12_000, 0);
    assertThat(new OperationRecord(1, d).encode()).isEqualTo("0000000000000001|Q1,4,5,0,12000,0");
    Decision old = (Decision) OperationRecord.decode("0000000000000001|Q1,4,5,0,12000,1").result();
    assertThat(old.limitIndex()).isEqualTo(1);
    assertThat(old.limits()).hasSize(1);
  }

  @Test
  void aCountThatDisagreesWithTheFieldsIsRefused() {
    assertThatThrownBy(() -> OperationRecord.decode("0000000000000001|Q1,4,5,0,12000,0,3,4,5,1,9,9,0"))
        .isInstanceOf(IllegalStateException.class).hasMessageContaining("7 + 3 per limit");
  }
}
