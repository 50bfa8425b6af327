package dev.tally.dynamodb;

import java.util.ArrayList;
import java.util.List;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.interceptor.SdkExecutionAttribute;

/** Records every HTTP request the SDK sends (retries included), by operation name. */
final class RequestCounter implements ExecutionInterceptor {
  private final List<String> sent = new ArrayList<>();

  @Override
  public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
    synchronized (sent) {
      sent.add(attributes.getAttribute(SdkExecutionAttribute.OPERATION_NAME));
    }
  }

  /** The requests sent since the last call, and starts over. */
  List<String> take() {
    synchronized (sent) {
      List<String> copy = new ArrayList<>(sent);
      sent.clear();
      return copy;
    }
  }
}
