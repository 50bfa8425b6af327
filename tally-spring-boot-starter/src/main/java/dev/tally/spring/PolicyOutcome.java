package dev.tally.spring;

import dev.tally.Decision;

/**
 * What one policy of a rule said about one request: the rule, the policy's id (as the header
 * fields name it), the key the request was limited by, and the store's {@link Decision}.
 *
 * @param rule the rule's name
 * @param policy the policy's id
 * @param key the key the request was limited by (a path variable, a header value...)
 * @param limiter the limiter's full name in the store
 * @param permits the units the request asked for
 * @param decision the store's answer for this policy
 * @param windowSeconds the policy's window, the {@code w} of {@code RateLimit-Policy}
 */
public record PolicyOutcome(String rule, String policy, String key, String limiter, long permits,
    Decision decision, long windowSeconds) {}
