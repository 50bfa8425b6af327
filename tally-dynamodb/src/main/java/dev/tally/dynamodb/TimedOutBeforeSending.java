package dev.tally.dynamodb;

import software.amazon.awssdk.core.exception.AbortedException;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;

/**
 * Stops a blocking request whose timeout fired before it was sent. The SDK's timer (2.57) ends a
 * blocking request by interrupting its thread and aborting the HTTP request registered with it;
 * one that fires before the request is registered (a thread starved of CPU, a slow connection
 * lease) only interrupts, and a socket read does not heed interrupts: the request would then
 * wait out the socket timeout, past the call's deadline (the likely cause of a 7.8 s call under a
 * 5 s timeout on an overloaded machine). The thread's interrupt, still set here, says the timer
 * fired: the request is aborted unsent, which the SDK reports as the timeout it is. A timer that
 * fires just after this check is caught by {@link DeadlineHttpClient}.
 */
final class TimedOutBeforeSending implements ExecutionInterceptor {
  @Override
  public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
    if (Thread.currentThread().isInterrupted()) {
      throw AbortedException.create("the call's timeout passed before the request was sent");
    }
  }
}
