package dev.tally.tck;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * A resource that refuses stale lease holders, as a storage service guarded by fencing tokens
 * does: a write carries the writer's {@link dev.tally.Lease#fencingToken()} and is accepted only if
 * no write with a higher token was accepted before it. It serves the newest writer: under a limit
 * of several permits, holders at once refuse each other's older tokens too. Shared by processes through one file,
 * each write a locked read-compare-write of the highest token accepted so far:
 *
 * <pre>
 * offset 0: long, big-endian   the highest token accepted (0 before the first write)
 * </pre>
 */
public final class FencedFile {
  private final Path file;

  public FencedFile(Path file) {
    this.file = file;
  }

  /** Writes on behalf of the holder of {@code token}: false, changing nothing, if a newer holder wrote. */
  @SuppressWarnings("try") // the lock is held for the block, never read
  public synchronized boolean write(long token) { // a file lock excludes other processes, not threads
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
        StandardOpenOption.WRITE);
        FileLock held = ch.lock()) {
      ByteBuffer highest = ByteBuffer.allocate(Long.BYTES);
      ch.read(highest, 0);
      long seen = highest.position() == Long.BYTES ? highest.getLong(0) : 0;
      if (token < seen) {
        return false;
      }
      ch.write(ByteBuffer.allocate(Long.BYTES).putLong(0, token), 0);
      return true;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }
}
