package dev.tally.server.http;

import com.fasterxml.jackson.core.util.BufferRecycler;
import com.fasterxml.jackson.core.util.RecyclerPool;
import io.netty.util.concurrent.FastThreadLocal;

/**
 * Jackson's read and write buffers, one set per thread as Jackson's default pool keeps them, but
 * held in a Netty {@link FastThreadLocal}: on an event loop that is an array index, where the
 * default pool's {@code ThreadLocal} of a {@code SoftReference} is a hash probe and a reference
 * check for every body parsed and every answer written.
 */
final class LoopRecyclerPool extends RecyclerPool.ThreadLocalPoolBase<BufferRecycler> {
  private static final long serialVersionUID = 1L;

  private static final FastThreadLocal<BufferRecycler> BUFFERS = new FastThreadLocal<>() {
    @Override
    protected BufferRecycler initialValue() {
      return new BufferRecycler();
    }
  };

  @Override
  public BufferRecycler acquirePooled() {
    return BUFFERS.get();
  }
}
