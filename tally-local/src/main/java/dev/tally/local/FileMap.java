package dev.tally.local;

import dev.tally.StoreException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Arrays;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;

/**
 * The store file mapped into memory, addressed by file offset. A mapping holds at most 2 GiB,
 * so the file is mapped as windows of {@code 1 << windowShift} bytes (1 GiB by default); a table
 * of any size is then a few mappings, and nothing the store accesses atomically (8-byte words,
 * 64-byte slots, key records) crosses a window. Windows are remapped larger as the file grows;
 * old mappings stay valid for threads still using them, since every mapping shares the same
 * page cache pages.
 *
 * <p>Atomic accesses go through {@link VarHandle} views of the buffers: on a direct buffer and
 * an aligned index they are the processor's atomic loads, stores and compare-and-swap, which are
 * atomic across processes because they act on shared physical memory.
 *
 * <p>Nothing here extends the file: {@link #mapTo} maps only what the file already holds, and
 * the store reserves every byte (writes it) before it maps it, so no access to a mapping can
 * fault on a full file system. An offset outside the mapping (which only a damaged field could
 * produce) is a {@link StoreException} naming it, never a raw index exception; a failed
 * {@code msync} is a {@link StoreException} too.
 */
final class FileMap {
  private static final VarHandle LONG =
      MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle INT =
      MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

  private final FileChannel channel;
  private final FileChannel.MapMode mode;
  private final int shift;
  private final long windowSize;
  private volatile MappedByteBuffer[] windows = new MappedByteBuffer[0];
  private volatile long mapped;
  /** How many times pages were forced to the device; for tests of the sync modes. */
  final AtomicLong forces = new AtomicLong();
  /** Set by tests only: told the offset and length of every {@link #force}, before it runs. */
  static volatile BiConsumer<Long, Long> forceHook;

  FileMap(FileChannel channel, int windowShift) {
    this(channel, windowShift, false);
  }

  /** A mapping for reading only (inspection): every write throws {@code ReadOnlyBufferException}. */
  FileMap(FileChannel channel, int windowShift, boolean readOnly) {
    this.channel = channel;
    this.mode = readOnly ? FileChannel.MapMode.READ_ONLY : FileChannel.MapMode.READ_WRITE;
    this.shift = windowShift;
    this.windowSize = 1L << windowShift;
  }

  int windowShift() {
    return shift;
  }

  long mapped() {
    return mapped;
  }

  /** Maps the file up to {@code length}; refused if the file is shorter. */
  synchronized void mapTo(long length) {
    if (length <= mapped) {
      return;
    }
    try {
      long size = channel.size();
      if (length > size) {
        throw new StoreException("the Tally store file is " + size + " bytes long, but its header"
            + " says " + length + ": it was truncated or its header is damaged");
      }
    } catch (IOException e) {
      throw new StoreException("cannot read the size of the Tally store file: " + e, e);
    }
    int count = (int) ((length + windowSize - 1) >>> shift);
    MappedByteBuffer[] w = Arrays.copyOf(windows, count);
    try {
      for (int i = 0; i < count; i++) {
        long start = (long) i << shift;
        long size = Math.min(windowSize, length - start);
        if (w[i] == null || w[i].capacity() < size) {
          w[i] = channel.map(mode, start, size);
        }
      }
    } catch (IOException | UncheckedIOException e) {
      throw new StoreException("cannot map the Tally store file: " + e, e);
    }
    windows = w;
    mapped = length;
  }

  private MappedByteBuffer w(long at) {
    return windows[(int) (at >>> shift)];
  }

  private StoreException outside(long at, RuntimeException e) {
    return new StoreException("offset " + at + " lies outside the mapped " + mapped + " bytes of"
        + " the Tally store file: a damaged field points there", e);
  }

  private int i(long at) {
    return (int) (at & (windowSize - 1));
  }

  long getLong(long at) {
    try {
      return (long) LONG.get(w(at), i(at));
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  long getLongVolatile(long at) {
    try {
      return (long) LONG.getVolatile(w(at), i(at));
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  void setLong(long at, long v) {
    try {
      LONG.set(w(at), i(at), v);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  void setLongVolatile(long at, long v) {
    try {
      LONG.setVolatile(w(at), i(at), v);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  boolean casLong(long at, long expect, long update) {
    try {
      return LONG.compareAndSet(w(at), i(at), expect, update);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  int getInt(long at) {
    try {
      return (int) INT.get(w(at), i(at));
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  int getIntVolatile(long at) {
    try {
      return (int) INT.getVolatile(w(at), i(at));
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  void setInt(long at, int v) {
    try {
      INT.set(w(at), i(at), v);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  void setIntVolatile(long at, int v) {
    try {
      INT.setVolatile(w(at), i(at), v);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  boolean casInt(long at, int expect, int update) {
    try {
      return INT.compareAndSet(w(at), i(at), expect, update);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  void setByteVolatile(long at, byte v) {
    try {
      w(at).put(i(at), v);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
    VarHandle.fullFence();
  }

  byte getByte(long at) {
    try {
      return w(at).get(i(at));
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  void getBytes(long at, byte[] dst, int off, int len) {
    try {
      w(at).get(i(at), dst, off, len);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  void putBytes(long at, byte[] src, int off, int len) {
    try {
      w(at).put(i(at), src, off, len);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  /** Whether {@code [at, at + len)} lies inside one window. */
  boolean oneWindow(long at, long len) {
    return (at >>> shift) == ((at + len - 1) >>> shift);
  }

  /** Writes the pages of {@code [at, at + len)} to the device (msync). */
  void force(long at, long len) {
    forces.incrementAndGet();
    BiConsumer<Long, Long> hook = forceHook;
    if (hook != null) {
      hook.accept(at, len);
    }
    long end = at + len;
    try {
      while (at < end) {
        MappedByteBuffer b = w(at);
        int from = i(at) & -Layout.PAGE;
        int to = (int) Math.min(b.capacity(), i(at) + (end - at));
        b.force(from, to - from);
        at = ((at >>> shift) + 1) << shift;
      }
    } catch (UncheckedIOException e) {
      throw notForced(e);
    } catch (IndexOutOfBoundsException e) {
      throw outside(at, e);
    }
  }

  private static StoreException notForced(UncheckedIOException e) {
    return new StoreException("cannot write the Tally store file to its device (msync): "
        + e.getCause(), e);
  }

  /** Writes every dirty page of the mapped file to the device. */
  void forceAll() {
    forces.incrementAndGet();
    try {
      for (MappedByteBuffer b : windows) {
        b.force();
      }
    } catch (UncheckedIOException e) {
      throw notForced(e);
    }
  }
}
