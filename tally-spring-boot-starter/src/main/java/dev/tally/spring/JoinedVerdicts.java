package dev.tally.spring;

/**
 * How a filter rule and {@link RateLimited} that both limit one request share it, the same on
 * either web stack: the filter leaves its verdict in the request's attributes (a servlet
 * request's, or a WebFlux exchange's), a {@link RateLimited} call joins its own to it, so that
 * the response reports every policy of both (the filter's first), and marks a refusal, so that
 * the filter gives its units back when the request is answered 429: as between the policies of
 * one rule, a refusal costs the others nothing. Free of both web stacks, each of which reaches
 * its attributes through {@link Attributes}.
 */
final class JoinedVerdicts {
  /** The request attribute holding the filter's verdict. */
  static final String FILTER_VERDICT = JoinedVerdicts.class.getName() + ".filterVerdict";
  /** Set once a {@link RateLimited} call refused the request after the filter allowed it. */
  static final String REFUSED_AFTER_FILTER = JoinedVerdicts.class.getName() + ".refusedAfterFilter";

  private JoinedVerdicts() {}

  /** A request's attributes, as either web stack holds them. */
  interface Attributes {
    Object get(String name);

    void put(String name, Object value);
  }

  /** Leaves the filter's {@code verdict} (an allowed one) for the {@link RateLimited} calls further down. */
  static void filterAllowed(Attributes request, RateLimitVerdict verdict) {
    request.put(FILTER_VERDICT, verdict);
  }

  /**
   * The verdict a {@link RateLimited} call reports: the filter's policies followed by its own, or
   * its own if no filter rule limited the request. A refusal is marked for the filter.
   */
  static RateLimitVerdict join(Attributes request, RateLimitVerdict verdict) {
    if (!(request.get(FILTER_VERDICT) instanceof RateLimitVerdict filter)) {
      return verdict;
    }
    if (!verdict.allowed()) {
      request.put(REFUSED_AFTER_FILTER, true);
    }
    return filter.and(verdict);
  }

  /**
   * The verdict to answer a refusal with ({@link RateLimitExceededException}): joined to the
   * filter's unless the call that refused has joined it already. (On WebFlux a call can run where
   * it cannot reach the request: then the exception handler, which can, joins.)
   */
  static RateLimitVerdict refusal(Attributes request, RateLimitVerdict verdict) {
    return request.get(REFUSED_AFTER_FILTER) != null ? verdict : join(request, verdict);
  }

  /** Whether a {@link RateLimited} call refused the request after the filter allowed it. */
  static boolean refusedAfterFilter(Attributes request) {
    return request.get(REFUSED_AFTER_FILTER) != null;
  }
}
