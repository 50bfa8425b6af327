package dev.tally.server.http;

import java.net.URI;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Keeps web pages away from a server that has no token. A browser lets any page send requests
 * to {@code localhost}: a form or {@code fetch(..., {mode: "no-cors"})} posts without a
 * preflight (CSRF), and a page whose own name is made to resolve to 127.0.0.1 reads the answers
 * as same-origin (DNS rebinding). Neither can forge the header fields checked here: a browser
 * always sends the page's {@code Origin} on a cross-origin POST, {@code Sec-Fetch-Site} on every
 * request, and the name the page used in {@code Host}. So, without a token:
 *
 * <ul>
 *   <li>{@code Host} must be a loopback name or address, or one given with {@code --allow-host};
 *   <li>{@code Origin}, if sent, must be such a host too, or an origin of the CORS allowlist;
 *   <li>{@code Sec-Fetch-Site}, if sent, must not be {@code cross-site} (unless the origin is on
 *       the allowlist).
 * </ul>
 *
 * <p>A request refused here gets 403 before anything is read or written. With a token, the
 * token decides (a page cannot know it), and only the allowlist gets CORS answers.
 */
final class BrowserGuard {
  private final Set<String> allowedHosts;
  private final Set<String> corsOrigins;

  BrowserGuard(List<String> allowedHosts, List<String> corsOrigins) {
    this.allowedHosts = allowedHosts.stream().map(h -> h.toLowerCase(Locale.ROOT))
        .collect(Collectors.toUnmodifiableSet());
    this.corsOrigins = corsOrigins.stream().map(BrowserGuard::normalOrigin)
        .collect(Collectors.toUnmodifiableSet());
  }

  /** An origin as browsers send it: scheme://host[:port], lower case, no path. */
  static String normalOrigin(String origin) {
    URI u;
    try {
      u = URI.create(origin.strip());
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--cors-origin '" + origin + "' is not an origin like"
          + " https://app.example.com");
    }
    if (u.getScheme() == null || u.getHost() == null || (u.getPath() != null && !u.getPath().isEmpty()
        && !u.getPath().equals("/")) || u.getQuery() != null) {
      throw new IllegalArgumentException("--cors-origin '" + origin + "' is not an origin like"
          + " https://app.example.com (scheme, host and optional port, nothing more)");
    }
    return u.getScheme().toLowerCase(Locale.ROOT) + "://" + u.getHost().toLowerCase(Locale.ROOT)
        + (u.getPort() < 0 ? "" : ":" + u.getPort());
  }

  boolean corsAllowed(String origin) {
    if (origin == null || corsOrigins.isEmpty()) {
      return false;
    }
    try {
      return corsOrigins.contains(normalOrigin(origin));
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  /**
   * Why a request without a token must be refused, or null to let it through.
   *
   * @param host the {@code Host} field (or HTTP/2 {@code :authority}), or null
   * @param origin the {@code Origin} field, or null
   * @param fetchSite the {@code Sec-Fetch-Site} field, or null
   */
  String refusal(String host, String origin, String fetchSite) {
    if (host != null && !trustedHost(hostName(host))) {
      return "Host '" + host + "' is not this machine: without a token the server answers only"
          + " requests addressed to localhost or a name given with --allow-host (a web page"
          + " whose name resolves here must not read or write counters)";
    }
    if (corsAllowed(origin)) {
      return null;
    }
    if (origin != null && !trustedOrigin(origin)) {
      return "requests from the web page at " + origin + " are refused: without a token only"
          + " pages on this machine or --cors-origin origins may call the server";
    }
    if (fetchSite != null && fetchSite.strip().equalsIgnoreCase("cross-site")) {
      return "cross-site requests are refused (Sec-Fetch-Site: cross-site): without a token"
          + " only pages on this machine or --cors-origin origins may call the server";
    }
    return null;
  }

  private boolean trustedOrigin(String origin) {
    if (origin.strip().equals("null")) {
      return false; // a sandboxed frame or a file: page
    }
    try {
      URI u = URI.create(origin.strip());
      return u.getHost() != null && trustedHost(u.getHost().toLowerCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      return false;
    }
  }

  private boolean trustedHost(String name) {
    return isLoopback(name) || allowedHosts.contains(name);
  }

  /** The name of a Host field: without the port, brackets of an IPv6 literal removed. */
  static String hostName(String host) {
    String h = host.strip().toLowerCase(Locale.ROOT);
    if (h.startsWith("[")) {
      int end = h.indexOf(']');
      return end < 0 ? h : h.substring(1, end);
    }
    int colon = h.lastIndexOf(':');
    return colon >= 0 && h.indexOf(':') == colon ? h.substring(0, colon) : h;
  }

  static boolean isLoopback(String name) {
    if (name.equals("127.0.0.1") || name.equals("localhost") || name.endsWith(".localhost") || name.equals("::1")
        || name.equals("0:0:0:0:0:0:0:1")) {
      return true;
    }
    // 127.0.0.0/8, written as a dotted quad (a name never is)
    String[] parts = name.split("\\.", -1);
    if (parts.length != 4 || !parts[0].equals("127")) {
      return false;
    }
    for (String p : parts) {
      if (p.isEmpty() || p.length() > 3 || !p.chars().allMatch(Character::isDigit)
          || Integer.parseInt(p) > 255) {
        return false;
      }
    }
    return true;
  }
}
