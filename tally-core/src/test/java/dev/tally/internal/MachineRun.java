package dev.tally.internal;

import dev.tally.Decision;
import dev.tally.Limit;
import dev.tally.spi.LimiterOperation;
import dev.tally.spi.LimiterOutcome;
import java.time.Instant;
import java.util.List;

/** Calls on one limiter machine, keeping its record between them, as a store would. */
class MachineRun {
  static final long SECOND = 1_000_000_000L;

  final LimiterMachine machine;
  long[] record;

  MachineRun(Limit... limits) {
    machine = LimiterMachine.of("k", List.of(limits));
  }

  /** {@code instant} (ISO-8601) in epoch nanoseconds. */
  static long at(String instant) {
    Instant i = Instant.parse(instant);
    return i.getEpochSecond() * SECOND + i.getNano();
  }

  /** Applies {@code op} and keeps the outcome's record. */
  Decision call(long now, LimiterOperation op, long permits) {
    LimiterOutcome out = machine.apply(Timelines.words(record == null ? null : record.clone()), now, op, permits);
    record = out.record();
    return out.decision();
  }

  /** What {@code op} would answer, keeping the record as it was. */
  Decision probe(long now, LimiterOperation op, long permits) {
    return machine.apply(Timelines.words(record == null ? null : record.clone()), now, op, permits).decision();
  }
}
