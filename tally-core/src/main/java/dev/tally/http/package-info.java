/**
 * How a rate limiter's {@link dev.tally.Decision} reads over HTTP, for every front end that
 * answers one (the Spring Boot starter, tally-server): the {@code RateLimit} and
 * {@code RateLimit-Policy} header fields of the IETF httpapi draft
 * draft-ietf-httpapi-ratelimit-headers-11, {@code Retry-After}, and RFC 9457 problem bodies as
 * JSON text. No dependency beyond the JDK and {@code dev.tally}, so any web stack can use it.
 */
package dev.tally.http;
