package dev.tally.local;

import dev.tally.Bounds;
import dev.tally.Counters;
import dev.tally.LeasedRateLimiter;
import dev.tally.Limit;
import dev.tally.RateLimiter;
import dev.tally.Tally;
import dev.tally.TimeSource;
import dev.tally.TransactionResult;
import java.io.IOException;
import java.nio.ByteOrder;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.locks.LockSupport;

/**
 * A child process for the multi-process and crash tests: opens the store named on its command
 * line, waits for a "go" file so that all children start together, runs one workload on a few
 * threads, and reports on stdout (or, for work that may be killed, in a memory-mapped report
 * file that outlives the process).
 *
 * <pre>
 * incr     DIR GO THREADS N KEYS      incr "hot" and "k:(i % KEYS)" N times per thread
 * add      DIR GO THREADS ROUNDS ID   add("add:r", ID*10 + thread) for each round; prints WIN r v
 * views    DIR GO THREADS N           incr "views" N times per thread
 * floor    DIR GO THREADS N           decr "quota" by 3 with floor 0, N times per thread; prints
 *                                     APPLIED a REFUSED r
 * pop      DIR GO STOP                pop "views" until STOP exists; prints POPPED total
 * drain    DIR GO THREADS B           drain "bucket:0".."bucket:B-1" in turn; prints GRANTED n0 n1 ...
 * campaign DIR GO THREADS REPORT HOOK a random mix until killed (see CrashTest)
 * once     DIR GO THREADS IDS         every thread sends incr "once" and an acquire on "once-bucket"
 *                                     with each of IDS ids, in the same order; prints ANSWERS a0 a1 ...
 * ids      DIR GO THREADS REPORT HOOK idempotent increments of "idem" with fresh ids until killed
 *                                     (see OperationIdCrashTest)
 * reserve  DIR GO THREADS N          every thread makes N reservations on {@link #reserved}: settles
 *                                     every other one itself (prints SETTLED actual) and leaves the
 *                                     rest open for the parent (prints HELD id estimate)
 * leased   DIR GO THREADS MILLIS      every thread acquires from a leased handle of {@link #LEASED}
 *                                     for MILLIS; prints LEASED and the instant of each grant
 * </pre>
 */
public final class Worker {
  private Worker() {}

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    Path dir = Path.of(args[1]);
    Path go = Path.of(args[2]);
    // The instant each thread's last decision was taken at: the grant's, read where the lease read it.
    ThreadLocal<long[]> lastRead = ThreadLocal.withInitial(() -> new long[1]);
    TimeSource system = TimeSource.system();
    TimeSource recording = () -> {
      long t = system.nanos();
      lastRead.get()[0] = t;
      return t;
    };
    try (Tally tally = Tally.builder("file:" + dir).timeSource(recording).build()) {
      Counters c = tally.counters();
      System.out.println("READY");
      System.out.flush();
      while (!Files.exists(go)) {
        Thread.sleep(1);
      }
      switch (mode) {
        case "incr" -> incr(c, Integer.parseInt(args[3]), Integer.parseInt(args[4]), Integer.parseInt(args[5]));
        case "add" -> add(c, Integer.parseInt(args[3]), Integer.parseInt(args[4]), Integer.parseInt(args[5]));
        case "floor" -> floor(c, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        case "views" -> onThreads(Integer.parseInt(args[3]), t -> {
          for (int i = 0, n = Integer.parseInt(args[4]); i < n; i++) {
            c.incr("views");
          }
        });
        case "pop" -> pop(c, Path.of(args[3]));
        case "drain" -> drain(tally, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        case "campaign" -> campaign(tally, Integer.parseInt(args[3]), Path.of(args[4]), args[5]);
        case "once" -> once(tally, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        case "ids" -> ids(c, Integer.parseInt(args[3]), Path.of(args[4]), args[5]);
        case "reserve" -> reserve(tally, Integer.parseInt(args[3]), Integer.parseInt(args[4]));
        case "leased" -> leased(tally, Integer.parseInt(args[3]), Long.parseLong(args[4]), lastRead);
        default -> throw new IllegalArgumentException(mode);
      }
    }
    System.out.println("DONE");
    System.out.flush();
  }

  interface Body {
    void run(int thread) throws Exception;
  }

  private static void onThreads(int threads, Body body) throws InterruptedException {
    List<Thread> all = new ArrayList<>();
    for (int t = 0; t < threads; t++) {
      int thread = t;
      Thread th = new Thread(() -> {
        try {
          body.run(thread);
        } catch (Exception e) {
          e.printStackTrace();
          System.out.println("FAILED " + e);
          System.out.flush();
        }
      });
      th.start();
      all.add(th);
    }
    for (Thread th : all) {
      th.join();
    }
  }

  private static void incr(Counters c, int threads, int n, int keys) throws InterruptedException {
    onThreads(threads, t -> {
      for (int i = 0; i < n; i++) {
        c.incr("hot");
        c.incr("k:" + (i % keys), 2);
      }
    });
  }

  /** The limiter of the "reserve" workload: nothing refused, nothing refilled within a run. */
  static RateLimiter reserved(Tally tally) {
    return tally.limiter("reserved", Limit.fixedWindow(1_000_000_000, Duration.ofDays(1)));
  }

  private static void reserve(Tally tally, int threads, int n) throws InterruptedException {
    RateLimiter l = reserved(tally);
    onThreads(threads, t -> {
      ThreadLocalRandom rnd = ThreadLocalRandom.current();
      for (int i = 0; i < n; i++) {
        long estimate = 1 + rnd.nextInt(500);
        dev.tally.Reservation r = l.reserve(estimate, Duration.ofMinutes(10));
        if (!r.granted()) {
          throw new IllegalStateException("refused: " + r.decision());
        }
        String line;
        if (i % 2 == 0) {
          long actual = rnd.nextLong(2 * estimate);
          r.settle(actual);
          line = "SETTLED " + actual;
        } else {
          line = "HELD " + r.id() + " " + estimate;
        }
        synchronized (System.out) {
          System.out.println(line);
        }
      }
    });
    System.out.flush();
  }

  private static void floor(Counters c, int threads, int n) throws InterruptedException {
    AtomicLong applied = new AtomicLong();
    AtomicLong refused = new AtomicLong();
    onThreads(threads, t -> {
      for (int i = 0; i < n; i++) {
        (c.decr("quota", 3, 0, Bounds.floor(0)).applied() ? applied : refused).incrementAndGet();
      }
    });
    System.out.println("APPLIED " + applied.get() + " REFUSED " + refused.get());
    System.out.flush();
  }

  private static void add(Counters c, int threads, int rounds, int id) throws InterruptedException {
    onThreads(threads, t -> {
      for (int r = 0; r < rounds; r++) {
        long value = id * 10L + t;
        if (c.add("add:" + r, value, Duration.ofMinutes(5))) {
          synchronized (System.out) {
            System.out.println("WIN " + r + " " + value);
            System.out.flush();
          }
        }
      }
    });
  }

  private static void pop(Counters c, Path stop) {
    long total = 0;
    while (!Files.exists(stop)) {
      total += c.pop("views").orElse(0);
    }
    total += c.pop("views").orElse(0);
    System.out.println("POPPED " + total);
  }

  /** Bucket {@code b} of {@link MultiProcessTest}: 100 units, one more a day (none during a test). */
  static RateLimiter bucket(Tally tally, int b) {
    return tally.limiter("bucket:" + b, Limit.tokenBucket(100, Duration.ofDays(1)));
  }

  /** The limit of the leased workload: a burst of 20, then 100 a second. */
  static final Limit LEASED = Limit.tokenBucket(20, 100, Duration.ofSeconds(1));
  /** Its lease time. */
  static final Duration LEASE_TIME = Duration.ofMillis(200);

  /**
   * Every thread acquires one permit at a time from one leased handle of {@link #LEASED} for
   * {@code millis}, with a pause between attempts, and notes each grant's instant.
   */
  private static void leased(Tally tally, int threads, long millis, ThreadLocal<long[]> lastRead)
      throws InterruptedException {
    List<Long> grants = java.util.Collections.synchronizedList(new ArrayList<>());
    try (LeasedRateLimiter lease = tally.limiter("leased", LEASED).leased(8, LEASE_TIME)) {
      long end = System.nanoTime() + millis * 1_000_000;
      onThreads(threads, t -> {
        while (System.nanoTime() - end < 0) {
          if (lease.tryAcquire()) {
            grants.add(lastRead.get()[0]);
          }
          LockSupport.parkNanos(200_000);
        }
      });
    }
    StringBuilder line = new StringBuilder("LEASED");
    synchronized (grants) {
      for (long g : grants) {
        line.append(' ').append(g);
      }
    }
    System.out.println(line);
    System.out.flush();
  }

  /** Each thread takes units from bucket 0 until it is denied, then from bucket 1, and so on. */
  private static void drain(Tally tally, int threads, int buckets) throws InterruptedException {
    AtomicLongArray granted = new AtomicLongArray(buckets);
    onThreads(threads, t -> {
      for (int b = 0; b < buckets; b++) {
        RateLimiter bucket = bucket(tally, b);
        while (bucket.tryAcquire()) {
          granted.incrementAndGet(b);
        }
      }
    });
    StringBuilder line = new StringBuilder("GRANTED");
    for (int b = 0; b < buckets; b++) {
      line.append(' ').append(granted.get(b));
    }
    System.out.println(line);
  }

  // ---------------------------------------------------------------- the crash campaign

  /** Per-thread report: longs at thread * 32 + field. */
  static final int KEYS = 8;
  static final int F_INFLIGHT = 0; // key index + 1 of the increment in flight, or 0
  static final int F_HOLDING = 1; // 1: sleeping in the lock hook, 2: in the transaction hook
  static final int F_MAX_LATENCY = 2; // nanos, of ops that did not sleep in a hook themselves
  static final int F_VIOLATIONS = 3; // transfer invariant seen broken
  static final int F_DEAD_OWNER_WAIT = 4; // the process's longest wait on a dead lock holder
  static final int F_OPS = 5;
  static final int F_LIM_INFLIGHT = 6; // bucket index + 1 of the acquire in flight, or 0
  static final int F_LIM_PERMITS = 7; // its permits
  static final int F_ACKS = 8; // KEYS longs: acknowledged increments per key
  static final int F_LIM_ACKS = 16; // BUCKETS longs: acknowledged grants (permits) per bucket
  static final int THREAD_LONGS = 256;

  /**
   * Leaky buckets "lim:0".."lim:199" of LIM_CAPACITY units that drain in a year (not during a
   * test), in LANES lanes: each thread drains the buckets of one lane, chosen at random, in turn.
   */
  static final int BUCKETS = 200;
  static final int LANES = 4;
  static final int LIM_CAPACITY = 5000;

  static RateLimiter limBucket(Tally tally, int b) {
    return tally.limiter("lim:" + b, Limit.leakyBucket(LIM_CAPACITY, Duration.ofDays(365)));
  }

  static MappedByteBuffer mapReport(Path file, int threads) throws IOException {
    try (FileChannel ch = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.READ,
        StandardOpenOption.WRITE)) {
      MappedByteBuffer b = ch.map(FileChannel.MapMode.READ_WRITE, 0, threads * THREAD_LONGS * 8L);
      b.order(ByteOrder.LITTLE_ENDIAN);
      return b;
    }
  }

  static int at(int thread, int field) {
    return (thread * THREAD_LONGS + field) * 8;
  }

  /**
   * Increments of "c:0".."c:7", each acknowledged in the report only after it returned; rate
   * limiter grants of 1 to 3 units from the buckets "lim:0".."lim:199" (a thread moves on to the
   * next bucket of its lane when one denies it), each acknowledged only after it returned; transfers
   * between "from" and "to" in transactions (their sum is always 0) and transactional reads that
   * check it; locked operations (touch, put, delete, add) on shared and private keys. With HOOK
   * "lock", "tx" or "record", now and then a thread sleeps while holding its slot locks, in the
   * middle of a transaction, or with a limiter's new record in its slot but not yet committed,
   * flagging it in the report so the parent can kill it right there.
   */
  private static void campaign(Tally tally, int threads, Path reportFile, String hook) throws Exception {
    Counters c = tally.counters();
    MappedByteBuffer report = mapReport(reportFile, threads);
    ThreadLocal<Integer> me = new ThreadLocal<>();
    ThreadLocal<boolean[]> slept = ThreadLocal.withInitial(() -> new boolean[1]);
    AtomicLong nextHook = new AtomicLong(System.nanoTime() + 50_000_000L);
    Runnable sleepHolding = () -> {
      long now = System.nanoTime();
      long next = nextHook.get();
      Integer t = me.get();
      if (t == null || now < next || !nextHook.compareAndSet(next, now + 250_000_000L)) {
        return;
      }
      report.putLong(at(t, F_HOLDING), hook.equals("tx") ? 2 : hook.equals("record") ? 3 : 1);
      slept.get()[0] = true;
      try {
        Thread.sleep(ThreadLocalRandom.current().nextInt(80, 200));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      report.putLong(at(t, F_HOLDING), 0);
    };
    if (hook.equals("lock")) {
      Table.whileLockedHook = sleepHolding;
    } else if (hook.equals("tx")) {
      Table.midTransactionHook = sleepHolding;
    } else if (hook.equals("record")) {
      Table.uncommittedRecordHook = sleepHolding;
    }
    String scratch = "s:" + ProcessHandle.current().pid() + ":";
    onThreads(threads, t -> {
      me.set(t);
      ThreadLocalRandom rnd = ThreadLocalRandom.current();
      int lane = rnd.nextInt(LANES);
      int bucket = lane * (BUCKETS / LANES);
      int lastOfLane = bucket + BUCKETS / LANES - 1;
      RateLimiter lim = limBucket(tally, bucket);
      for (long op = 0; ; op++) {
        slept.get()[0] = false;
        long started = System.nanoTime();
        int dice = rnd.nextInt(100);
        int k = rnd.nextInt(KEYS);
        if (dice < 45) {
          report.putLong(at(t, F_INFLIGHT), k + 1);
          c.incr("c:" + k);
          report.putLong(at(t, F_ACKS + k), report.getLong(at(t, F_ACKS + k)) + 1);
          report.putLong(at(t, F_INFLIGHT), 0);
        } else if (dice < 65) {
          long permits = 1 + rnd.nextInt(3);
          report.putLong(at(t, F_LIM_PERMITS), permits);
          report.putLong(at(t, F_LIM_INFLIGHT), bucket + 1);
          if (lim.tryAcquire(permits)) {
            int a = at(t, F_LIM_ACKS + bucket);
            report.putLong(a, report.getLong(a) + permits);
          } else if (bucket < lastOfLane) {
            lim = limBucket(tally, ++bucket);
          }
          report.putLong(at(t, F_LIM_INFLIGHT), 0);
        } else if (dice < 75) {
          c.transaction(tx -> tx.decr("from", 1).incr("to"));
        } else if (dice < 85) {
          TransactionResult r = c.transaction(tx -> tx.get("from").get("to"));
          if (r.isPresent(0) && r.isPresent(1) && r.getLong(0) + r.getLong(1) != 0) {
            report.putLong(at(t, F_VIOLATIONS), report.getLong(at(t, F_VIOLATIONS)) + 1);
          }
        } else if (dice < 90) {
          c.touch("c:" + k, null);
        } else if (dice < 95) {
          String s = scratch + (op % 64);
          c.put(s, op, null);
          c.delete(s);
        } else {
          c.add("a:" + (op % 16), op, Duration.ofMillis(20));
        }
        long took = System.nanoTime() - started;
        if (!slept.get()[0] && took > report.getLong(at(t, F_MAX_LATENCY))) {
          report.putLong(at(t, F_MAX_LATENCY), took);
        }
        report.putLong(at(t, F_OPS), op + 1);
        if ((op & 63) == 0) {
          report.putLong(at(t, F_DEAD_OWNER_WAIT), Locks.LONGEST_DEAD_OWNER_WAIT.get());
        }
        if ((op & 15) == 15) {
          LockSupport.parkNanos(20_000); // leave the machine's two cores some room
        }
      }
    });
  }

  // ---------------------------------------------------------------- operation ids

  /** The bucket of the multi-process id test: 1,000 units, none refilled during a test. */
  static RateLimiter onceBucket(Tally tally) {
    return tally.limiter("once-bucket", Limit.tokenBucket(1_000, Duration.ofDays(1)));
  }

  /**
   * Every thread sends the ids "same-0".."same-(IDS-1)" in the same order, so that the threads of
   * every process send each id at about the same moment: an increment of "once" and an acquire
   * of one unit from {@link #onceBucket} (id "acq-i"). Prints the increments' answers, once the
   * threads of this process agreed on each, or FAILED.
   */
  private static void once(Tally tally, int threads, int ids) throws InterruptedException {
    Counters c = tally.counters();
    RateLimiter bucket = onceBucket(tally);
    long[][] answers = new long[threads][ids];
    onThreads(threads, t -> {
      for (int i = 0; i < ids; i++) {
        answers[t][i] = c.withOperationId("same-" + i).incr("once");
        bucket.withOperationId("acq-" + i).decide(1);
      }
    });
    StringBuilder line = new StringBuilder("ANSWERS");
    for (int i = 0; i < ids; i++) {
      for (int t = 1; t < threads; t++) {
        if (answers[t][i] != answers[0][i]) {
          System.out.println("FAILED id same-" + i + ": thread 0 got " + answers[0][i] + ", thread "
              + t + " got " + answers[t][i]);
        }
      }
      line.append(' ').append(answers[0][i]);
    }
    System.out.println(line);
  }

  /** Per-thread report of the "ids" mode: longs at thread * THREAD_LONGS + field. */
  static final int F_ID_STARTED = 0; // ids started: id n is "PID-thread-n", sent before n + 1 is written
  static final int F_ID_ACKED = 1; // ids whose call returned
  static final int F_ID_LAST = 2; // what the last acknowledged id's call returned
  static final int F_ID_REPLAY_WRONG = 3; // replays of an acknowledged id that returned another answer
  static final int F_ID_HOLDING = 4; // 1: sleeping in a hook

  static String crashId(long pid, int thread, long n) {
    return pid + "-" + thread + "-" + n;
  }

  /**
   * Idempotent increments of "idem", each with a fresh id, until killed; every third call also
   * repeats the id acknowledged last and checks that it answers as it did. The report says which
   * ids were started and which answered, and is written around each call, so the parent knows
   * every id that may have reached the store. With HOOK "tx" (or "lock"), now and then a thread
   * sleeps between writing the counter's slot and the id's (or while holding both locks, before
   * either is written), flagging it so the parent can kill it right there.
   */
  private static void ids(Counters c, int threads, Path reportFile, String hook) throws Exception {
    MappedByteBuffer report = mapReport(reportFile, threads);
    long pid = ProcessHandle.current().pid();
    ThreadLocal<Integer> me = new ThreadLocal<>();
    AtomicLong nextHook = new AtomicLong(System.nanoTime() + 30_000_000L);
    Runnable sleepHolding = () -> {
      long now = System.nanoTime();
      long next = nextHook.get();
      Integer t = me.get();
      if (t == null || now < next || !nextHook.compareAndSet(next, now + 400_000_000L)) {
        return;
      }
      report.putLong(at(t, F_ID_HOLDING), 1);
      try {
        Thread.sleep(ThreadLocalRandom.current().nextInt(60, 150));
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      report.putLong(at(t, F_ID_HOLDING), 0);
    };
    if (hook.equals("tx")) {
      Table.midTransactionHook = sleepHolding;
    } else if (hook.equals("lock")) {
      Table.whileLockedHook = sleepHolding;
    }
    onThreads(threads, t -> {
      me.set(t);
      for (long n = 0; ; n++) {
        report.putLong(at(t, F_ID_STARTED), n + 1);
        long answer = c.withOperationId(crashId(pid, t, n)).incr("idem");
        report.putLong(at(t, F_ID_LAST), answer);
        report.putLong(at(t, F_ID_ACKED), n + 1);
        if (n % 3 == 2) {
          long again = c.withOperationId(crashId(pid, t, n)).incr("idem");
          if (again != answer) {
            report.putLong(at(t, F_ID_REPLAY_WRONG), report.getLong(at(t, F_ID_REPLAY_WRONG)) + 1);
          }
        }
        if ((n & 15) == 15) {
          LockSupport.parkNanos(20_000); // leave the machine's two cores some room
        }
      }
    });
  }
}
