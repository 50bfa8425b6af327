package dev.tally.internal;

import dev.tally.CircuitBreaker;
import dev.tally.StoreException;
import dev.tally.StoreTimeoutException;
import dev.tally.StoreUnavailableException;
import dev.tally.TallyException;
import dev.tally.TallyListener;
import dev.tally.TimeSource;
import dev.tally.spi.Store;
import java.lang.System.Logger.Level;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.Executor;

/**
 * The circuit breaker of one opened store: counts the store's consecutive failures and, past the
 * threshold, refuses calls for a while so that failure policies answer at once. Every call of
 * {@link CircuitBreakerStore} asks {@link #admit()} first and reports how it ended to
 * {@link #answered} or {@link #ended}.
 *
 * <h2>States</h2>
 *
 * <pre>
 *   Closed(n) --failure, n + 1 &lt; threshold--&gt; Closed(n + 1)
 *   Closed(n) --failure, n + 1 = threshold---&gt; Open(now)            calls refused
 *   Closed(n) --answer---------------------&gt; Closed(0)
 *   Open      --a call, openFor after it opened: compareAndSet--&gt; Probing   the probe starts in
 *                                                  the background; that call is refused at once
 *   Probing   --the probe is answered, or ends otherwise--&gt; Closed(0)
 *   Probing   --the probe fails-------------&gt; Open(now)            another openFor
 * </pre>
 *
 * <h2>The probe</h2>
 *
 * <p>The probe is not a caller's call: it is a read of one key ({@value #PROBE_KEY}) that says
 * nothing to users, made on the store beneath the circuit from the blocking executor. A caller
 * that finds the probe due starts it and is refused at once, as is every call while it is in
 * flight; no caller ever waits for it. So a frozen store, whose calls take the store's whole
 * timeout, costs a probe thread that timeout once per {@code openFor}, and callers nothing. The
 * read is a normal store call, bounded by the store's own timeout; beneath the circuit there is no
 * key prefix, and a store that was not open yet ({@link DeferredStore}) is opened by it. Only when
 * the probe has run on the caller's thread (an executor that runs tasks at once) and answered is
 * that caller admitted.
 *
 * <p>A probe that ends in anything but a failure closes the circuit: an answer (a value, none, or
 * a {@link TallyException} that is not a {@link StoreException}) and anything else (another store
 * exception, a bug) alike. The rule for calls is that such an ending says nothing of the store's
 * health and neither opens the circuit nor keeps it open; if the probe kept the circuit open on
 * it, a store that answers every probe that way (it refuses the key, a bug in its read) would stay
 * shut for good. If the store is in fact down, the calls that follow fail and open it again. Such
 * an ending is logged as a warning, at most once per {@code openFor}.
 *
 * <p>A failure is a {@link StoreUnavailableException} or {@link StoreTimeoutException}: the store
 * could not be reached or did not answer. A {@link TallyException} that is not a
 * {@link StoreException} (overflow, a missing key, a wrong kind, an operation id's conflict) is an
 * answer, as good a sign of a live store as a value. Anything else (another store exception, an
 * argument the store refused, a bug) says nothing of the store's health and changes nothing.
 * Calls admitted while the circuit was closed that end after it opened change nothing either:
 * only the probe decides when it closes. A call refused because another call is opening a store
 * that was not open yet ({@link DeferredStore.OpenedElsewhere}) is neither a failure nor an
 * answer: it changes nothing, except that a probe refused so counts as a failed probe. A probe
 * that cannot be started (the executor refuses
 * it: the Tally is closing) counts as a failed probe.
 *
 * <h2>Concurrency</h2>
 *
 * <p>The whole state is one field holding an immutable object, changed only by
 * {@code compareAndSet}, so every transition is one atomic step and happens once: of two threads
 * whose failures reach the threshold together, one opens the circuit and reports it; of many
 * callers that find it ready to probe, one wins the {@code compareAndSet} from that
 * {@code Open} and starts the one probe, and all are refused. There is no ABA: each {@code Open} and
 * {@code Probing} is a new object, compared by identity, so a caller that read an older
 * {@code Open} cannot probe a newer one.
 *
 * <p>Memory ordering. {@link #state} is read with a volatile (acquire) read, which pairs with the
 * volatile (release) write of the {@code compareAndSet} that installed the value: a call that
 * sees {@code Open} sees it as soon as it was installed, and sees the failure that opened it. The
 * state objects' fields are final, so even a racy read would see them whole; the volatile read is
 * there for freshness, not for the fields. An acquire read ({@code getAcquire}) would do as well
 * (nothing here orders a later write of ours against it); on x86 both are a plain load.
 *
 * <p>The hot path, a call on a closed circuit with no failures counted, is two volatile reads of
 * {@link #state} (one to admit, one after the answer to see that there is no count to reset) and
 * no write. A write there, even of the value already held, would take the cache line in exclusive
 * state on every call, and it is read by every core on every call: the line would move from core
 * to core and the breaker would become the point of contention of a store that has none.
 */
final class Circuit {
  private static final System.Logger LOG = System.getLogger("dev.tally");
  private static final VarHandle STATE;

  static {
    try {
      STATE = MethodHandles.lookup().findVarHandle(Circuit.class, "state", State.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** Closed, with no failures counted: the one instance, so the hot path compares identity. */
  private static final Closed CLOSED = new Closed(0);

  /** The key the probe reads: any answer will do, and its value is never used. */
  static final String PROBE_KEY = "tally:circuit-probe";

  private final String store;
  private final int threshold;
  private final long openForNanos;
  private final CircuitBreaker settings;
  private final TimeSource time;
  private final TallyListener listener;
  private final Store probed;
  private final Executor executor;

  /** Read directly (volatile), changed through {@link #STATE} only. */
  private volatile State state = CLOSED;

  /**
   * @param store the scheme of the store's URI, for messages and the listener
   * @param settings an enabled breaker's settings
   * @param time the clock of {@code openFor}
   * @param probed the store beneath the circuit, which the probe reads
   * @param executor where the probe runs: the blocking executor, never a caller's thread
   */
  Circuit(String store, CircuitBreaker settings, TimeSource time, TallyListener listener, Store probed,
      Executor executor) {
    if (!settings.enabled()) {
      throw new IllegalArgumentException("a disabled circuit breaker needs no circuit");
    }
    this.store = store;
    this.threshold = settings.failureThreshold();
    this.openForNanos = settings.openFor().toNanos();
    this.settings = settings;
    this.time = time;
    this.listener = listener;
    this.probed = probed;
    this.executor = executor;
  }

  /** The state a call was admitted in: give it back to {@link #answered} or {@link #ended}. */
  abstract static sealed class State permits Closed, Open, Probing {}

  /** Calls go to the store; {@code failures} is the length of the current run of failures. */
  static final class Closed extends State {
    final int failures;

    Closed(int failures) {
      this.failures = failures;
    }
  }

  /** Calls are refused until {@code openFor} after {@code since}; then the next starts the probe. */
  static final class Open extends State {
    final long since;
    final Throwable cause;
    final boolean probeFailed;

    Open(long since, Throwable cause, boolean probeFailed) {
      this.since = since;
      this.cause = cause;
      this.probeFailed = probeFailed;
    }
  }

  /** The probe is in flight; every call is refused until it ends. */
  static final class Probing extends State {
    final Open after;

    Probing(Open after) {
      this.after = after;
    }
  }

  /**
   * Admits a call: returns the state to report its end with, or refuses it.
   *
   * @throws StoreUnavailableException if the circuit is open or a probe is in flight: the call
   *     must not reach the store
   */
  State admit() {
    State s = state; // volatile read: see the note on memory ordering
    if (s instanceof Closed) {
      return s;
    }
    return admitWhileOpen(s);
  }

  private State admitWhileOpen(State s) {
    for (;;) {
      if (s instanceof Closed) {
        return s; // closed by a probe since the first read
      }
      if (s instanceof Probing p) {
        throw refuseInFlight(p);
      }
      Open o = (Open) s;
      long waited = time.nanos() - o.since;
      if (probeDue(waited)) {
        Probing p = new Probing(o);
        if (STATE.compareAndSet(this, o, p)) {
          startProbe(p);
          return afterProbeStarted();
        }
        s = state; // another caller started the probe (or it already closed it): look again
        continue;
      }
      throw refuseOpen(o, waited);
    }
  }

  /**
   * The caller that started the probe: admitted only if the probe has already closed the circuit
   * (it ran on this thread), else refused like any other. It looks once, never probes again: a
   * probe that failed at once has opened the circuit for another {@code openFor}.
   */
  private State afterProbeStarted() {
    State s = state;
    if (s instanceof Closed) {
      return s;
    }
    if (s instanceof Probing p) {
      throw refuseInFlight(p);
    }
    Open o = (Open) s;
    throw refuseOpen(o, time.nanos() - o.since);
  }

  private void startProbe(Probing p) {
    try {
      executor.execute(() -> probe(p));
    } catch (RuntimeException notStarted) { // RejectedExecutionException: the Tally is closing
      failed(p, notStarted);
    }
  }

  /** Reads {@link #PROBE_KEY} and reports how it ended, as a call admitted in {@code p} would. */
  private void probe(Probing p) {
    try {
      probed.get(PROBE_KEY);
    } catch (RuntimeException e) {
      ended(p, e); // not rethrown: a failed probe is expected and reported, not a thread's crash
      return;
    } catch (Error e) {
      ended(p, e);
      throw e;
    }
    answered(p);
  }

  private StoreUnavailableException refuseInFlight(Probing p) {
    return refuse("a probe of the store is in flight; calls go to the store again when it answers",
        p.after.cause);
  }

  private StoreUnavailableException refuseOpen(Open o, long waited) {
    long nextMillis = (openForNanos - waited + 999_999) / 1_000_000;
    return refuse((o.probeFailed ? "a probe failed" : threshold + " calls in a row failed")
        + "; the next probe is in " + nextMillis + " ms", o.cause);
  }

  private StoreUnavailableException refuse(String why, Throwable cause) {
    try {
      listener.onCircuitRejected(store);
    } catch (RuntimeException listenerBug) {
      LOG.log(Level.ERROR, "TallyListener threw; ignoring", listenerBug);
    }
    return new StoreUnavailableException("the circuit of the " + store + " store is open, so this"
        + " call was not sent: " + why + " (last failure: " + message(cause) + ")", cause);
  }

  /** The call admitted in {@code admitted} was answered by the store. */
  void answered(State admitted) {
    if (state != CLOSED) { // volatile read; on the hot path the only cost of a success
      answeredSlowly(admitted);
    }
  }

  private void answeredSlowly(State admitted) {
    if (admitted instanceof Probing) {
      if (STATE.compareAndSet(this, admitted, CLOSED)) {
        closed();
      }
      return;
    }
    // A call admitted while closed ends the run of failures, unless the circuit opened
    // meanwhile: then it is the probe's to close.
    for (State s = state; s instanceof Closed && s != CLOSED; s = state) {
      if (STATE.compareAndSet(this, s, CLOSED)) {
        return;
      }
    }
  }

  /** The call admitted in {@code admitted} threw {@code e}. */
  void ended(State admitted, Throwable e) {
    if (e instanceof DeferredStore.OpenedElsewhere) {
      // Another call is opening the store: nothing is known of its health yet. A caller's call
      // neither counts nor resets a run of failures; the probe, which is there to learn that the
      // store answers, did not, and the circuit stays open for another openFor.
      if (admitted instanceof Probing) {
        failed(admitted, e);
      }
      return;
    }
    if (e instanceof StoreUnavailableException || e instanceof StoreTimeoutException) {
      failed(admitted, e);
    } else if (e instanceof TallyException && !(e instanceof StoreException)) {
      answered(admitted);
    } else if (admitted instanceof Probing) {
      // Not an outage: see "The probe" in the class comment for why this closes the circuit.
      LOG.log(Level.WARNING, "the {0} store''s probe ended in {1}, which is not an outage; its circuit"
          + " closes", store, e.toString());
      answered(admitted);
    }
  }

  private void failed(State admitted, Throwable e) {
    if (admitted instanceof Probing) {
      Open o = new Open(time.nanos(), e, true);
      if (STATE.compareAndSet(this, admitted, o)) {
        opened(o);
      }
      return;
    }
    for (;;) {
      State s = state;
      if (!(s instanceof Closed c)) {
        return; // opened meanwhile: the probe decides
      }
      State next = c.failures + 1 >= threshold ? new Open(time.nanos(), e, false) : new Closed(c.failures + 1);
      if (STATE.compareAndSet(this, s, next)) {
        if (next instanceof Open o) {
          opened(o);
        }
        return;
      }
    }
  }

  private void opened(Open o) {
    if (o.probeFailed) {
      LOG.log(Level.DEBUG, "the {0} store failed its probe ({1}); calls fail at once for {2} more",
          store, message(o.cause), dev.tally.Durations.format(settings.openFor()));
    } else {
      LOG.log(Level.WARNING, "the {0} store failed {1} calls in a row (the last: {2}); its circuit"
          + " is open: calls fail at once, answered by their failure policy, and one probes the"
          + " store every {3}", store, threshold, message(o.cause),
          dev.tally.Durations.format(settings.openFor()));
    }
    try {
      listener.onCircuitOpened(store, o.cause, settings.openFor());
    } catch (RuntimeException listenerBug) {
      LOG.log(Level.ERROR, "TallyListener threw; ignoring", listenerBug);
    }
  }

  private void closed() {
    LOG.log(Level.INFO, "the {0} store answered a probe; its circuit is closed and calls go to it"
        + " again", store);
    try {
      listener.onCircuitClosed(store);
    } catch (RuntimeException listenerBug) {
      LOG.log(Level.ERROR, "TallyListener threw; ignoring", listenerBug);
    }
  }

  /** Where the circuit stands, as {@link dev.tally.Tally#circuitState()} reports it. */
  CircuitBreaker.State state() {
    State s = state;
    if (s instanceof Closed) {
      return CircuitBreaker.State.CLOSED;
    }
    if (s instanceof Probing) {
      return CircuitBreaker.State.HALF_OPEN;
    }
    return probeDue(time.nanos() - ((Open) s).since) ? CircuitBreaker.State.HALF_OPEN
        : CircuitBreaker.State.OPEN;
  }

  /**
   * Whether a circuit open for {@code waited} nanoseconds is due a probe: after {@code openFor},
   * or at once if the clock was set back past the opening (else a step back would keep the store
   * shut for as long as the step).
   */
  private boolean probeDue(long waited) {
    return waited >= openForNanos || waited < 0;
  }

  private static String message(Throwable t) {
    return t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
  }

  @Override
  public String toString() {
    return "Circuit[" + store + ", " + state() + ", " + settings + "]";
  }
}
