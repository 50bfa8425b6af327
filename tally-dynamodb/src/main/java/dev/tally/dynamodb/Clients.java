package dev.tally.dynamodb;

import java.time.Duration;
import java.util.List;
import java.util.ServiceLoader;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.client.config.ClientOverrideConfiguration;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.http.SdkHttpClient;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.http.SdkHttpConfigurationOption;
import software.amazon.awssdk.http.async.SdkAsyncHttpClient;
import software.amazon.awssdk.http.async.SdkAsyncHttpService;
import software.amazon.awssdk.utils.AttributeMap;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.retries.StandardRetryStrategy;
import software.amazon.awssdk.retries.api.BackoffStrategy;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbAsyncClientBuilder;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;
import software.amazon.awssdk.services.dynamodb.DynamoDbClientBuilder;

/**
 * The SDK clients a store uses, built from its URI: one blocking client for counters (with the
 * {@code retries} option), one for limiters (with {@code limiterRetries}, few by default: a
 * rate limiter that waits seconds on a throttled table is worse than one that answers), both on
 * one Apache HTTP connection pool, and an asynchronous client when an async HTTP implementation
 * is on the class path.
 */
final class Clients implements AutoCloseable {
  /**
   * How long a pooled connection may idle before it is closed. Below the 5 s after which a
   * Node.js server (dynalite) closes an idle keep-alive connection, so that a request is never
   * sent on a connection the server is closing: with lost answers not retried, that would reach
   * the caller as "may or may not have been applied".
   */
  static final Duration MAX_IDLE = Duration.ofSeconds(4);

  final DynamoDbClient counters;
  final DynamoDbClient limiters;
  private final SdkHttpClient http;
  private final Options options;
  private final List<ExecutionInterceptor> interceptors;
  private final boolean asyncAvailable;
  private DynamoDbAsyncClient async; // guarded by this; built on first use
  private boolean closed; // guarded by this

  Clients(Options o, List<ExecutionInterceptor> interceptors) {
    this.http = new DeadlineHttpClient(Apache5HttpClient.builder()
        .maxConnections(64)
        .connectionMaxIdleTime(MAX_IDLE)
        .connectionTimeout(connectTimeout(o))
        // Backstops: the SDK's call and attempt timeouts (set per request by the Runner) act first.
        .socketTimeout(o.timeout())
        .connectionAcquisitionTimeout(o.timeout())
        .build());
    this.options = o;
    this.interceptors = List.copyOf(interceptors);
    this.asyncAvailable = o.async() == Options.Async.AUTO && asyncHttpAvailable();
    DynamoDbClient c = null;
    DynamoDbClient l = null;
    try {
      c = configure(DynamoDbClient.builder(), o, o.retries(), interceptors).httpClient(http).build();
      l = configure(DynamoDbClient.builder(), o, o.limiterRetries(), interceptors).httpClient(http).build();
    } catch (RuntimeException e) {
      closeQuietly(c);
      closeQuietly(l);
      http.close();
      throw e;
    }
    this.counters = c;
    this.limiters = l;
  }

  /**
   * How long opening a connection may take: the attempt timeout, at most 2 s. A connection that
   * did not open sent nothing, so the SDK tries again, with time left in the call for it.
   */
  static Duration connectTimeout(Options o) {
    Duration cap = Duration.ofSeconds(2);
    return o.attemptTimeout().compareTo(cap) < 0 ? o.attemptTimeout() : cap;
  }

  /** Whether an asynchronous client can be had. */
  boolean asyncAvailable() {
    return asyncAvailable;
  }

  /**
   * The asynchronous client, built on first use: its event loop costs threads, and seconds to
   * shut down, that a process using only the blocking API should not pay.
   */
  synchronized DynamoDbAsyncClient async() {
    if (closed) {
      throw new IllegalStateException("the clients are closed");
    }
    if (async == null) {
      SdkAsyncHttpService service = ServiceLoader.load(SdkAsyncHttpService.class, Clients.class.getClassLoader())
          .findFirst().orElseThrow();
      async = configure(DynamoDbAsyncClient.builder(), options, options.retries(), interceptors)
          .httpClientBuilder(new Bounded(service, options))
          .build();
    }
    return async;
  }

  /**
   * The class path's async HTTP client, with {@link #MAX_IDLE} and the blocking client's
   * timeouts (its defaults wait 10 s for a pooled connection, 30 s for a read); the SDK owns (and
   * closes) it.
   */
  private static final class Bounded implements SdkAsyncHttpClient.Builder<Bounded> {
    private final SdkAsyncHttpService service;
    private final Options options;

    Bounded(SdkAsyncHttpService service, Options options) {
      this.service = service;
      this.options = options;
    }

    @Override
    public SdkAsyncHttpClient buildWithDefaults(AttributeMap defaults) {
      return service.createAsyncHttpClientFactory().buildWithDefaults(AttributeMap.builder()
          .put(SdkHttpConfigurationOption.CONNECTION_MAX_IDLE_TIMEOUT, MAX_IDLE)
          .put(SdkHttpConfigurationOption.CONNECTION_TIMEOUT, connectTimeout(options))
          .put(SdkHttpConfigurationOption.READ_TIMEOUT, options.timeout())
          .put(SdkHttpConfigurationOption.WRITE_TIMEOUT, options.timeout())
          .put(SdkHttpConfigurationOption.CONNECTION_ACQUIRE_TIMEOUT, options.timeout())
          .build().merge(defaults));
    }
  }

  private static boolean asyncHttpAvailable() {
    return ServiceLoader.load(SdkAsyncHttpService.class, Clients.class.getClassLoader()).findFirst().isPresent();
  }

  private static <B extends software.amazon.awssdk.awscore.client.builder.AwsClientBuilder<B, ?>> B configure(
      B b, Options o, int retries, List<ExecutionInterceptor> interceptors) {
    b.region(region(o)).credentialsProvider(credentials(o));
    if (o.endpoint() != null) {
      b.endpointOverride(o.endpoint());
    }
    ClientOverrideConfiguration.Builder c = ClientOverrideConfiguration.builder()
        // For requests outside a store call (opening, creating the table); the Runner bounds
        // each of a call's requests by what is left of the call's timeout (Deadline). As there,
        // an attempt is cut short only where the SDK retries it: a cold JVM on a busy machine
        // can take seconds over its first request.
        .apiCallTimeout(o.timeout())
        .apiCallAttemptTimeout(o.retryLost() ? o.attemptTimeout() : o.timeout())
        .retryStrategy(StandardRetryStrategy.builder()
            // The SDK's defaults also retry 5xx answers and connections lost after the request
            // went out, after which a write may have been applied: a plain increment could count
            // twice. Without them (retryLost=false, the default) such a failure reaches the
            // caller as "may or may not have been applied"; requests that carry an id of their
            // own (operation ids, limiter writes, transactions) are re-sent by the Runner.
            .useClientDefaults(o.retryLost())
            .maxAttempts(retries + 1)
            .retryOnException(Errors::neverApplied)
            .treatAsThrottling(t -> t instanceof software.amazon.awssdk.awscore.exception.AwsServiceException e
                && e.isThrottlingException())
            .backoffStrategy(BackoffStrategy.exponentialDelay(Duration.ofMillis(25), Duration.ofSeconds(1)))
            .throttlingBackoffStrategy(BackoffStrategy.exponentialDelay(Duration.ofMillis(50), Duration.ofSeconds(2)))
            .circuitBreakerEnabled(false)
            .build());
    if (b instanceof DynamoDbClientBuilder) {
      c.addExecutionInterceptor(new TimedOutBeforeSending());
    }
    for (ExecutionInterceptor i : interceptors) {
      c.addExecutionInterceptor(i);
    }
    b.overrideConfiguration(c.build());
    if (b instanceof DynamoDbClientBuilder sync) {
      sync.endpointDiscoveryEnabled(false);
    } else if (b instanceof DynamoDbAsyncClientBuilder async) {
      async.endpointDiscoveryEnabled(false);
    }
    return b;
  }

  private static Region region(Options o) {
    if (o.region() != null) {
      return Region.of(o.region());
    }
    if (o.endpoint() != null) {
      return Region.US_EAST_1; // a local server ignores it, but the SDK signs with one
    }
    try {
      return new software.amazon.awssdk.regions.providers.DefaultAwsRegionProviderChain().getRegion();
    } catch (RuntimeException e) {
      throw new IllegalArgumentException("no AWS region: add region=… to the store URI (e.g. "
          + Options.EXAMPLE + ") or set AWS_REGION", e);
    }
  }

  private static AwsCredentialsProvider credentials(Options o) {
    if (o.accessKey() != null) {
      return StaticCredentialsProvider.create(AwsBasicCredentials.create(o.accessKey(), o.secretKey()));
    }
    if (o.localEndpoint()) {
      // Local servers (dynalite) check no signature; spare the user inventing credentials.
      return StaticCredentialsProvider.create(AwsBasicCredentials.create("local", "local"));
    }
    return DefaultCredentialsProvider.builder().build();
  }

  private static void closeQuietly(AutoCloseable c) {
    if (c != null) {
      try {
        c.close();
      } catch (Exception ignored) {
        // closing after a failed build
      }
    }
  }

  @Override
  public void close() {
    DynamoDbAsyncClient a;
    synchronized (this) {
      closed = true;
      a = async;
    }
    closeQuietly(counters);
    closeQuietly(limiters);
    closeQuietly(a);
    http.close();
  }
}
