package dev.tally.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.Entry;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.server.ratelimit.NamedLimits.Code;
import dev.tally.server.ratelimit.NamedLimits.Outcome;
import dev.tally.server.ratelimit.NamedLimits.Status;
import dev.tally.server.ratelimit.Rule;
import dev.tally.server.ratelimit.Rules;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * The operator's named limits ({@code --rules}) as HTTP and the command line answer them:
 * {@code POST /v1/ratelimit/{domain}} and {@code tally ratelimit}. The same {@link NamedLimits}
 * decides as for Envoy's gRPC calls; the body mirrors envoyproxy/ratelimit's {@code /json}
 * answer (the proto3 JSON of {@code RateLimitResponse}), with Tally's own additions: which rule
 * matched and where it is written, and {@code storedLimits} when the limits stored with a
 * limiter decided instead of the rule's, as every limiter answer says.
 */
public final class NamedLimitCalls {
  private static final Set<String> BODY_FIELDS = Set.of("descriptors", "hitsAddend");
  private static final Set<String> DESCRIPTOR_FIELDS = Set.of("entries");
  private static final Set<String> ENTRY_FIELDS = Set.of("key", "value");
  static final String EXAMPLE = "{\"descriptors\": [{\"entries\": [{\"key\": \"remote_address\","
      + " \"value\": \"10.0.0.1\"}]}]}";

  private NamedLimitCalls() {}

  /** The descriptors and addend of a request body: {@code {"descriptors": [...], "hitsAddend": 1}}. */
  record Request(List<Descriptor> descriptors, long hitsAddend) {}

  static Request parse(byte[] body) {
    Body b = Body.parse(body, EXAMPLE, BODY_FIELDS);
    JsonNode list = b.raw("descriptors");
    if (list == null || !list.isArray() || list.isEmpty()) {
      throw new RequestException("'descriptors' must be a list of at least one descriptor, e.g. "
          + EXAMPLE);
    }
    List<Descriptor> descriptors = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      String where = "descriptors[" + i + "]";
      JsonNode d = list.get(i);
      if (!d.isObject()) {
        throw new RequestException("'" + where + "' must be an object {\"entries\": [...]}");
      }
      JsonNode entries = Body.of((ObjectNode) d, where + ".", DESCRIPTOR_FIELDS).raw("entries");
      if (entries == null || !entries.isArray() || entries.isEmpty()) {
        throw new RequestException("'" + where + ".entries' must be a list of at least one"
            + " {\"key\": ..., \"value\": ...}");
      }
      List<Entry> es = new ArrayList<>(entries.size());
      for (int j = 0; j < entries.size(); j++) {
        String at = where + ".entries[" + j + "]";
        if (!entries.get(j).isObject()) {
          throw new RequestException("'" + at + "' must be an object {\"key\": ..., \"value\":"
              + " ...}");
        }
        Body e = Body.of((ObjectNode) entries.get(j), at + ".", ENTRY_FIELDS);
        String key = e.requiredString("key", "\"remote_address\"");
        if (key.isEmpty()) {
          throw new RequestException("'" + at + ".key' is empty");
        }
        String value = e.string("value");
        es.add(new Entry(key, value == null ? "" : value));
      }
      descriptors.add(new Descriptor(es, null));
    }
    long hits = b.integer("hitsAddend", 0);
    if (hits < 0 || hits > NamedLimits.MAX_UINT32) {
      throw new RequestException("'hitsAddend' must be from 0 to " + NamedLimits.MAX_UINT32
          + " (0 means 1), not " + hits);
    }
    return new Request(descriptors, hits);
  }

  /**
   * Checks {@code descriptors} of {@code domain}, with an operation id or null; {@code limits}
   * null means the server has no rules. The stage always completes normally.
   */
  public static CompletionStage<Reply> check(NamedLimits limits, String domain,
      List<Descriptor> descriptors, long hitsAddend, String operationId) {
    if (limits == null) {
      return CompletableFuture.completedFuture(Reply.error(Problem.NOT_FOUND, "this server has"
          + " no named limits: start it with --rules FILE_OR_DIRECTORY (see docs/envoy.md)"));
    }
    if (!limits.rules().current().hasDomain(domain)) {
      return CompletableFuture.completedFuture(Reply.error(Problem.NOT_FOUND, "no rules for"
          + " domain '" + domain + "'; the rules define " + known(limits.rules())));
    }
    CompletionStage<Outcome> stage;
    try {
      stage = limits.check(domain, descriptors, hitsAddend, operationId);
    } catch (RuntimeException e) {
      return CompletableFuture.completedFuture(Reply.error(e));
    }
    return stage.handle((o, failure) -> failure != null ? Reply.error(Api.unwrap(failure))
        : reply(o, descriptors));
  }

  private static String known(Rules rules) {
    Set<String> d = rules.current().domains();
    return d.isEmpty() ? "no domain yet" : "domains " + String.join(", ", d);
  }

  static CompletionStage<Reply> check(NamedLimits limits, String domain, byte[] body,
      String operationId) {
    Request r = parse(body);
    return check(limits, domain, r.descriptors(), r.hitsAddend(), operationId);
  }

  private static Reply reply(Outcome o, List<Descriptor> descriptors) {
    ObjectNode body = Json.object().put("domain", o.domain());
    body.put("overallCode", o.overall().name());
    ArrayNode statuses = body.putArray("statuses");
    boolean differ = false;
    long retryAfter = 0;
    String over = null;
    for (int i = 0; i < o.statuses().size(); i++) {
      Status s = o.statuses().get(i);
      ObjectNode n = statuses.addObject().put("code", s.code().name());
      Rule r = s.rule();
      n.put("descriptor", descriptors.get(i).toString());
      if (r == null) {
        n.putNull("rule");
        n.put("limitRemaining", 0);
        continue;
      }
      n.put("rule", r.path());
      n.put("source", r.source());
      if (r.unlimited()) {
        n.put("unlimited", true);
        n.put("limitRemaining", s.remaining());
        continue;
      }
      ObjectNode limit = n.putObject("currentLimit");
      if (r.name() != null) {
        limit.put("name", r.name());
      }
      limit.put("requestsPerUnit", r.requestsPerUnit());
      limit.put("unit", r.unit().name());
      n.put("limitRemaining", s.remaining());
      n.put("durationUntilReset", protoDuration(s.resetNanos()));
      n.put("durationUntilResetMillis", (s.resetNanos() + 999_999) / 1_000_000);
      if (r.shadowMode()) {
        n.put("shadowMode", true);
      }
      if (s.storedDiffers()) {
        differ = true;
        n.put("storedLimits", "differ: the limiter '" + s.limiter() + "' holds a limit of "
            + s.storedLimit() + ", which decided; something other than the rules wrote it");
      }
      if (s.code() == Code.OVER_LIMIT && s.enforced()) {
        retryAfter = Math.max(retryAfter, RateLimitFields.ceilSeconds(s.resetNanos()));
        if (over == null) {
          over = descriptors.get(i) + " is over its limit of " + r.describe() + " (" + r.source()
              + ")";
        }
      }
    }
    Reply reply;
    if (o.overall() == Code.OVER_LIMIT) {
      body.put("message", "domain '" + o.domain() + "': " + over);
      reply = Reply.denied(body);
      reply.header("Retry-After", Long.toString(Math.max(1, retryAfter)));
    } else {
      reply = Reply.ok(body);
    }
    if (differ) {
      reply.header("Tally-Limits", "stored-differ");
    }
    return reply;
  }

  /** A duration as proto3 JSON writes one: {@code "42s"}, {@code "0.25s"}. */
  static String protoDuration(long nanos) {
    long seconds = nanos / 1_000_000_000L;
    int fraction = (int) (nanos % 1_000_000_000L);
    if (fraction == 0) {
      return seconds + "s";
    }
    String digits = Integer.toString(1_000_000_000 + fraction); // "1" and nine digits
    int end = digits.length();
    while (digits.charAt(end - 1) == '0') {
      end--;
    }
    return seconds + "." + digits.substring(1, end) + "s";
  }

  /** {@code GET /v1/ratelimit}: the rules in force, where from, and the last refused reload. */
  static Reply rules(NamedLimits limits) {
    if (limits == null) {
      return Reply.error(Problem.NOT_FOUND, "this server has no named limits: start it with"
          + " --rules FILE_OR_DIRECTORY (see docs/envoy.md)");
    }
    Rules.Status s = limits.rules().status();
    ObjectNode body = Json.object();
    ArrayNode domains = body.putArray("domains");
    s.domains().forEach(domains::add);
    ArrayNode files = body.putArray("files");
    s.files().forEach(files::add);
    body.put("loadedAt", s.loadedAt().toString());
    body.put("reloads", s.applied());
    body.put("refusedReloads", s.refused());
    if (s.lastError() == null) {
      body.putNull("lastError");
    } else {
      body.put("lastError", s.lastError());
    }
    return Reply.ok(body);
  }
}
