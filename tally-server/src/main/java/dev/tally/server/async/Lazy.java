package dev.tally.server.async;

import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/** A value made on first use, once (a pool most runs never need), then shared. */
public final class Lazy<T> {
  private final Supplier<T> make;
  private volatile T value;

  public Lazy(Supplier<T> make) {
    this.make = make;
  }

  public T get() {
    T v = value;
    if (v == null) {
      synchronized (this) {
        if ((v = value) == null) {
          value = v = make.get();
        }
      }
    }
    return v;
  }

  /** The value if it was made, else null. */
  public T made() {
    return value;
  }

  /** Daemon threads named {@code prefix} and a count: a pool's threads never hold the JVM up. */
  public static ThreadFactory daemonThreads(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> {
      Thread t = new Thread(r, prefix + n.incrementAndGet());
      t.setDaemon(true);
      return t;
    };
  }
}
