package dev.tally.dynamodb;

import java.io.IOException;
import java.net.SocketTimeoutException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import software.amazon.awssdk.http.ExecutableHttpRequest;
import software.amazon.awssdk.http.HttpExecuteRequest;
import software.amazon.awssdk.http.HttpExecuteResponse;
import software.amazon.awssdk.http.SdkHttpClient;

/**
 * The blocking HTTP client with a backstop for the SDK's call timeout: a request still running
 * {@link #GRACE_MILLIS} after the deadline of the store call that sent it ({@link
 * Deadline#current()}) is aborted here.
 *
 * <p>Why the SDK's own timer is not enough: it ends a blocking request by interrupting the thread
 * and aborting the HTTP request registered with it. A timer that fires in the moment between the
 * request's last interceptor ({@link TimedOutBeforeSending}) and its registration only
 * interrupts, and a socket read does not heed interrupts: the request then waits on the server,
 * and a frozen server holds it for as long as it is frozen (a 7 s call under a 5 s timeout, seen
 * once in a thousand freezes). The abort here needs no registration: it is armed before the
 * request is sent and closes its connection, which ends a blocked read at once.
 */
final class DeadlineHttpClient implements SdkHttpClient {
  /** Past the deadline, the time the SDK's own timer has to act first, with its own error. */
  static final long GRACE_MILLIS = 100;

  private final SdkHttpClient delegate;
  private final ScheduledThreadPoolExecutor timer;

  DeadlineHttpClient(SdkHttpClient delegate) {
    this.delegate = delegate;
    this.timer = new ScheduledThreadPoolExecutor(1, r -> {
      Thread t = new Thread(r, "tally-dynamodb-deadline");
      t.setDaemon(true);
      return t;
    });
    timer.setRemoveOnCancelPolicy(true); // a request that ends in time leaves nothing queued
  }

  @Override
  public ExecutableHttpRequest prepareRequest(HttpExecuteRequest request) {
    ExecutableHttpRequest prepared = delegate.prepareRequest(request);
    Deadline deadline = Deadline.current();
    return deadline == null ? prepared : new Bounded(prepared, deadline);
  }

  @Override
  public String clientName() {
    return delegate.clientName();
  }

  @Override
  public void close() {
    timer.shutdownNow();
    delegate.close();
  }

  /** One request, aborted if it outlives its call's deadline. */
  private final class Bounded implements ExecutableHttpRequest {
    private final ExecutableHttpRequest request;
    private final Deadline deadline;
    private final AtomicBoolean abortedAtDeadline = new AtomicBoolean();

    Bounded(ExecutableHttpRequest request, Deadline deadline) {
      this.request = request;
      this.deadline = deadline;
    }

    @Override
    public HttpExecuteResponse call() throws IOException {
      long delay = deadline.remainingNanos() + TimeUnit.MILLISECONDS.toNanos(GRACE_MILLIS);
      ScheduledFuture<?> alarm = timer.schedule(() -> {
        abortedAtDeadline.set(true);
        request.abort();
      }, Math.max(0, delay), TimeUnit.NANOSECONDS);
      try {
        return request.call();
      } catch (IOException | RuntimeException e) {
        if (abortedAtDeadline.get()) {
          // A timeout, as the caller sees it: no answer came within the call's time.
          SocketTimeoutException timeout = new SocketTimeoutException(
              "no answer within the call's timeout; the request was aborted");
          timeout.initCause(e);
          throw timeout;
        }
        throw e;
      } finally {
        alarm.cancel(false);
      }
    }

    @Override
    public void abort() {
      request.abort();
    }
  }
}
