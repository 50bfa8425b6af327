package dev.tally.tck;

import dev.tally.TimeSource;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * {@link ManualTimeSource} across processes: a test clock that one process, the test, moves and
 * that child JVMs read as their stores' {@link TimeSource}, so a multi-process test scripts the
 * time every process decides at. Beside the time, each participant (a child's worker thread,
 * say) has a progress word it alone writes, the last instant it finished its work at; the test
 * waits for every participant at each step before it moves the clock again, so a step is a
 * barrier across processes, with a bounded wait and no sleep standing for progress.
 *
 * <p>The file ({@link #create} writes it, {@link #open} maps it), in native byte order, every word
 * 8-byte aligned (the atomic access modes below need that), each on a 64-byte line of its own so
 * that a participant's progress writes do not make the time's readers miss their cache:
 *
 * <pre>
 *   0                8                16                                   64
 *   +----------------+----------------+------------------------------------+
 *   | MAGIC          | participants n | (unused)                           |  written once, by create
 *   +----------------+----------------+------------------------------------+
 *  64 | time: epoch nanoseconds       |  written by the creating process only (setRelease)
 * 128 | progress[0]                   |  written by participant 0 only (setRelease); NOT_YET at first
 * 192 | progress[1]                   |  ...
 *     | ...                           |
 *  128 + 64 × (n − 1) | progress[n − 1]
 * </pre>
 *
 * <p>Ordering: each word has one writer, which writes with {@code setRelease}; readers read with
 * {@code getAcquire}. A participant that sees a new time therefore sees all the test wrote before
 * moving it, and the test that sees a participant's progress sees all that participant did
 * before publishing it (its log, its grants). Reads of the time are plain loads on x86 and
 * cheap elsewhere, as a store's clock must be.
 */
public final class MappedTimeSource implements TimeSource {
  /** "tallyclk" in ASCII: a file that is not a clock is refused, not misread. */
  static final long MAGIC = 0x74616c6c79636c6bL;
  /** A progress word before its participant published anything. */
  public static final long NOT_YET = Long.MIN_VALUE;

  private static final int LINE = 64;
  private static final int MAGIC_OFFSET = 0;
  private static final int PARTICIPANTS_OFFSET = 8;
  private static final int TIME_OFFSET = LINE;
  private static final int PROGRESS_OFFSET = 2 * LINE;

  private static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.nativeOrder());

  private final MappedByteBuffer map;
  private final int participants;
  /** Only the process that created the file moves the time: one writer, so no read-modify-write races. */
  private final boolean owner;

  private MappedTimeSource(MappedByteBuffer map, int participants, boolean owner) {
    this.map = map;
    this.participants = participants;
    this.owner = owner;
  }

  /**
   * Creates (or overwrites) the clock file at {@code start} for {@code participants}
   * participants, each with its progress {@link #NOT_YET}; the instance returned moves the time.
   */
  public static MappedTimeSource create(Path file, Instant start, int participants) {
    if (participants < 1) {
      throw new IllegalArgumentException("participants must be 1 or more, not " + participants);
    }
    MappedByteBuffer map = map(file, PROGRESS_OFFSET + (long) LINE * participants, true);
    for (int p = 0; p < participants; p++) {
      LONGS.setRelease(map, progressOffset(p), NOT_YET);
    }
    LONGS.setRelease(map, TIME_OFFSET, start.getEpochSecond() * 1_000_000_000L + start.getNano());
    LONGS.setRelease(map, PARTICIPANTS_OFFSET, (long) participants);
    LONGS.setRelease(map, MAGIC_OFFSET, MAGIC); // last: a reader that sees it sees the rest
    return new MappedTimeSource(map, participants, true);
  }

  /** Maps a clock file another process {@linkplain #create created}: to read the time and publish progress. */
  public static MappedTimeSource open(Path file) {
    MappedByteBuffer head = map(file, PROGRESS_OFFSET, false);
    long magic = (long) LONGS.getAcquire(head, MAGIC_OFFSET);
    if (magic != MAGIC) {
      throw new IllegalArgumentException(file + " is not a test clock file (magic " + Long.toHexString(magic) + ")");
    }
    int n = Math.toIntExact((long) LONGS.getAcquire(head, PARTICIPANTS_OFFSET));
    return new MappedTimeSource(map(file, PROGRESS_OFFSET + (long) LINE * n, false), n, false);
  }

  private static MappedByteBuffer map(Path file, long size, boolean create) {
    List<StandardOpenOption> options = new ArrayList<>(List.of(StandardOpenOption.READ, StandardOpenOption.WRITE));
    if (create) {
      options.add(StandardOpenOption.CREATE);
      options.add(StandardOpenOption.TRUNCATE_EXISTING);
    }
    // The mapping outlives the channel: nothing to close afterwards.
    try (FileChannel ch = FileChannel.open(file, options.toArray(StandardOpenOption[]::new))) {
      if (!create && ch.size() < size) {
        throw new IllegalArgumentException(file + " holds " + ch.size() + " bytes, not the " + size
            + " of a test clock file");
      }
      MappedByteBuffer map = ch.map(FileChannel.MapMode.READ_WRITE, 0, size);
      map.order(ByteOrder.nativeOrder());
      return map;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static int progressOffset(int participant) {
    return PROGRESS_OFFSET + LINE * participant;
  }

  @Override
  public long nanos() {
    return (long) LONGS.getAcquire(map, TIME_OFFSET);
  }

  /** How many participants the file has progress words for. */
  public int participants() {
    return participants;
  }

  /** Sets the time; only in the process that created the file. */
  public synchronized void setNanos(long nanos) {
    if (!owner) {
      throw new IllegalStateException("only the process that created the clock file moves its time");
    }
    LONGS.setRelease(map, TIME_OFFSET, nanos);
  }

  /** Moves the time by {@code d}; only in the process that created the file. */
  public synchronized void advance(Duration d) {
    setNanos(nanos() + d.toNanos());
  }

  /**
   * Waits until the time is at least {@code nanos} and returns it: a participant waiting for the
   * next step. Polls every few microseconds (a park, not a spin: the machine may have fewer
   * cores than there are participants).
   *
   * @throws IllegalStateException if the time did not get there within {@code timeout}
   */
  public long awaitTime(long nanos, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (;;) {
      long now = nanos();
      if (now - nanos >= 0) {
        return now;
      }
      if (System.nanoTime() - deadline > 0) {
        throw new IllegalStateException("the test clock stayed at " + now + " for " + timeout
            + ", waiting for " + nanos + ": the test process stopped moving it");
      }
      LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(20));
    }
  }

  /** Publishes that {@code participant} finished its work at {@code instant}. */
  public void done(int participant, long instant) {
    LONGS.setRelease(map, progressOffset(check(participant)), instant);
  }

  /** The last instant {@code participant} published, or {@link #NOT_YET}. */
  public long progress(int participant) {
    return (long) LONGS.getAcquire(map, progressOffset(check(participant)));
  }

  /**
   * Waits until every participant has published progress at {@code instant} or later: the step
   * is done everywhere. A bounded wait, not a timing assertion: {@code timeout} is generous, and
   * only a stuck or dead participant exceeds it.
   *
   * @throws AssertionError naming the participants behind, if the wait ran out
   */
  public void awaitProgress(long instant, Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    for (int p = 0; p < participants; p++) {
      while (progress(p) == NOT_YET || progress(p) - instant < 0) {
        if (System.nanoTime() - deadline > 0) {
          StringBuilder behind = new StringBuilder();
          for (int q = 0; q < participants; q++) {
            long at = progress(q);
            if (at == NOT_YET || at - instant < 0) {
              behind.append(' ').append(q).append(at == NOT_YET ? " (nothing yet)" : " (at " + at + ")");
            }
          }
          throw new AssertionError("participants did not finish the step at " + instant + " within "
              + timeout + ":" + behind);
        }
        LockSupport.parkNanos(TimeUnit.MICROSECONDS.toNanos(20));
      }
    }
  }

  private int check(int participant) {
    if (participant < 0 || participant >= participants) {
      throw new IllegalArgumentException("participant " + participant + " of " + participants);
    }
    return participant;
  }

  @Override
  public String toString() {
    return "MappedTimeSource[" + nanos() + ", " + participants + " participants]";
  }
}
