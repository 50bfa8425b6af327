package dev.tally.server.http;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.util.ByteArrayBuilder;
import com.fasterxml.jackson.core.util.JsonGeneratorDelegate;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.ObjectReader;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.annotation.JsonSerialize;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.ser.std.ToStringSerializer;
import dev.tally.Decision;
import dev.tally.JointDecision;
import dev.tally.server.app.CounterTtl;
import dev.tally.server.app.BoundedValue;
import dev.tally.server.app.ConcurrencyLease;
import dev.tally.server.app.CounterValue;
import dev.tally.server.app.Deleted;
import dev.tally.server.app.Health;
import dev.tally.server.app.KeyList;
import dev.tally.server.app.JointLimiterDecision;
import dev.tally.server.app.LimiterDecision;
import dev.tally.server.app.NamedLimitResult;
import dev.tally.server.app.Problem;
import dev.tally.server.app.RequestException;
import dev.tally.server.app.TxResult;
import dev.tally.server.ratelimit.NamedLimits.Code;
import dev.tally.server.ratelimit.NamedLimits.Status;
import dev.tally.server.ratelimit.Rule;
import dev.tally.server.ratelimit.Rules;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigInteger;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The one JSON mapping of the HTTP API and the command line's {@code --json}, on Jackson:
 * request bodies read strictly (no duplicates, no trailing data), and the result records of
 * {@code dev.tally.server.app} written straight to bytes with a streaming generator, in the
 * member order docs/openapi.yaml shows. With {@code int64=string} the same writer goes through
 * a generator that writes every integer as a string.
 */
final class Json {
  static final JsonNodeFactory NODES = JsonNodeFactory.instance;
  static final ObjectMapper MAPPER = JsonMapper.builder(JsonFactory.builder()
          .recyclerPool(new LoopRecyclerPool()).build())
      .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
      .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
      // NaN and Infinity are read, so that the field's check says what is wrong with them
      .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
      .nodeFactory(NODES)
      .addMixIn(KeyList.class, KeyListJson.class)
      .addMixIn(ConcurrencyLease.class, LeaseJson.class)
      .addMixIn(Rules.Status.class, RulesJson.class)
      .build();
  /** Reads request bodies as trees, with the tree deserializer found once, not per body. */
  private static final ObjectReader TREES = MAPPER.readerFor(JsonNode.class);
  /** Jackson's advice to its programmers ("enable JsonReadFeature...") is not for our users. */
  private static final Pattern ADVICE = Pattern.compile(
      ":? *\\(?(enable `?JsonReadFeature|not recognized as one since Feature)[^)]*\\)?");

  private Json() {}

  static ObjectNode object() {
    return NODES.objectNode();
  }

  // ------------------------------------------------------------------ reading

  /** Parses a request body; an empty body is an empty object. */
  static ObjectNode parseObject(byte[] body, String example) {
    if (body.length == 0) {
      return object();
    }
    JsonNode node;
    try (JsonParser p = TREES.createParser(body)) {
      node = TREES.readTree(p);
      if (p.nextToken() != null) {
        throw new RequestException("malformed JSON: unexpected data after the object");
      }
    } catch (JsonProcessingException e) {
      var at = e.getLocation();
      String what = ADVICE.matcher(e.getOriginalMessage().lines().findFirst().orElse(""))
          .replaceAll("").strip();
      throw new RequestException("malformed JSON: " + what
          + (at == null ? "" : " (line " + at.getLineNr() + ", column " + at.getColumnNr() + ")"));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    if (node == null || node.isMissingNode()) { // white space only
      return object();
    }
    if (!node.isObject()) {
      throw new RequestException("expected a JSON object like " + example);
    }
    return (ObjectNode) node;
  }

  static String string(JsonNode node) {
    try {
      return MAPPER.writeValueAsString(node);
    } catch (JsonProcessingException e) {
      throw new IllegalStateException(e);
    }
  }

  // ------------------------------------------------------------------ writing

  /** The body of {@code reply}; integers as strings if {@code int64Strings}, but a problem's status. */
  static byte[] body(Reply reply, boolean int64Strings) {
    if (reply.rendered() != null) {
      return rendered(reply.rendered(), int64Strings);
    }
    Writer w = WRITERS.get();
    try {
      JsonGenerator raw = w.generator;
      JsonGenerator g = int64Strings ? new Int64Strings(raw) : raw;
      g.writeStartObject();
      Problem p = reply.problem();
      if (p != null) {
        g.writeStringField("type", p.type());
        g.writeStringField("title", p.title());
        raw.writeNumberField("status", p.status()); // a number always, as RFC 9457 defines it
        g.writeStringField("detail", reply.message());
        g.writeStringField("error", p.code());
        g.writeStringField("message", reply.message());
      }
      if (reply.result() != null) {
        members(g, reply.result());
      }
      g.writeEndObject();
      raw.flush();
      byte[] bytes = w.out.toByteArray();
      w.out.reset(); // toByteArray resets only a builder that grew past its first block
      return bytes;
    } catch (IOException e) {
      WRITERS.remove();
      throw new UncheckedIOException(e);
    } catch (RuntimeException | Error e) {
      WRITERS.remove(); // the generator is inside an unfinished object: the next body needs a new one
      throw e;
    }
  }

  /**
   * A generator and the bytes it writes, kept by each thread for every body it writes: making a
   * generator (its context, buffers and output) cost as much as writing an answer with it. Each
   * body is a root value of its own, written without a separator and taken out whole.
   */
  private static final class Writer {
    /** Reset after each body; it keeps its last block (at most 128 KiB) for the next. */
    final ByteArrayBuilder out = new ByteArrayBuilder(512);
    final JsonGenerator generator;

    Writer() {
      try {
        generator = MAPPER.getFactory().createGenerator(out);
      } catch (IOException e) {
        throw new UncheckedIOException(e);
      }
      generator.setRootValueSeparator(null);
    }
  }

  private static final ThreadLocal<Writer> WRITERS = ThreadLocal.withInitial(Writer::new);

  /** A body {@code dev.tally.http} wrote, its integers made strings if asked (but the status). */
  private static byte[] rendered(dev.tally.http.Problem problem, boolean int64Strings) {
    byte[] json = problem.toJson().getBytes(java.nio.charset.StandardCharsets.UTF_8);
    if (!int64Strings) {
      return json;
    }
    ByteArrayBuilder out = new ByteArrayBuilder(json.length + 32);
    try (JsonGenerator raw = MAPPER.getFactory().createGenerator(out)) {
      JsonGenerator g = new Int64Strings(raw);
      g.writeStartObject();
      for (Map.Entry<String, JsonNode> f : MAPPER.readTree(json).properties()) {
        g.writeFieldName(f.getKey());
        MAPPER.writeTree(f.getKey().equals("status") ? raw : g, f.getValue());
      }
      g.writeEndObject();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    return out.toByteArray();
  }

  private static void members(JsonGenerator g, Object result) throws IOException {
    if (result instanceof CounterValue c) {
      g.writeStringField("key", c.key());
      number(g, "value", c.value());
    } else if (result instanceof BoundedValue b) {
      g.writeStringField("key", b.key());
      number(g, "value", b.value());
      g.writeBooleanField("applied", b.applied());
    } else if (result instanceof Deleted d) {
      g.writeStringField("key", d.key());
      g.writeBooleanField("deleted", true);
    } else if (result instanceof CounterTtl t) {
      ttl(g, t);
    } else if (result instanceof TxResult tx) {
      g.writeArrayFieldStart("results");
      for (TxResult.Item i : tx.results()) {
        g.writeStartObject();
        g.writeStringField("key", i.key());
        if (i.deleted() != null) {
          g.writeBooleanField("deleted", i.deleted());
        } else {
          number(g, "value", i.value());
        }
        g.writeEndObject();
      }
      g.writeEndArray();
    } else if (result instanceof LimiterDecision d) {
      decision(g, d);
    } else if (result instanceof JointLimiterDecision j) {
      joint(g, j);
    } else if (result instanceof Health h) {
      if (h.failure() == null) {
        g.writeStringField("status", "ok");
      } else {
        // a problem: "status" is the HTTP status there (RFC 9457), so the state is "health"
        g.writeStringField("health", "unavailable");
      }
      g.writeStringField("store", h.store());
      g.writeNumberField("latencyMicros", h.latencyMicros());
    } else if (result instanceof NamedLimitResult n) {
      named(g, n);
    } else { // the records off the hot path, by their components and the mixins below
      for (Map.Entry<String, JsonNode> f : MAPPER.<ObjectNode>valueToTree(result).properties()) {
        g.writeFieldName(f.getKey());
        MAPPER.writeTree(g, f.getValue());
      }
    }
  }

  @JsonInclude(JsonInclude.Include.NON_NULL)
  interface KeyListJson {}

  interface LeaseJson {
    @JsonInclude(JsonInclude.Include.NON_DEFAULT) // a renewal does not learn the weight
    long weight();

    @JsonSerialize(using = ToStringSerializer.class)
    Instant expiresAt();
  }

  @JsonPropertyOrder({"domains", "files", "loadedAt", "reloads", "refusedReloads", "lastError"})
  interface RulesJson {
    @JsonSerialize(using = ToStringSerializer.class)
    Instant loadedAt();

    @JsonProperty("reloads")
    long applied();

    @JsonProperty("refusedReloads")
    long refused();
  }

  private static void number(JsonGenerator g, String field, Number value) throws IOException {
    if (value == null) {
      g.writeNullField(field);
    } else if (value instanceof Double d) {
      g.writeNumberField(field, d);
    } else {
      g.writeNumberField(field, value.longValue());
    }
  }

  private static void ttl(JsonGenerator g, CounterTtl t) throws IOException {
    g.writeStringField("key", t.key());
    Duration ttl = t.ttl();
    if (ttl == null) {
      g.writeNullField("ttl");
      g.writeNullField("ttlMillis");
    } else {
      g.writeStringField("ttl", t.text());
      g.writeNumberField("ttlMillis", ttl.toMillis()); // exact
    }
  }

  private static void decision(JsonGenerator g, LimiterDecision ld) throws IOException {
    Decision d = ld.decision();
    g.writeStringField("name", ld.name());
    g.writeBooleanField("allowed", d.allowed());
    g.writeNumberField("permits", ld.permits());
    g.writeNumberField("remaining", d.remaining());
    g.writeNumberField("limit", d.limit());
    retryAfter(g, ld.never(), ld.retryAfterMillis());
    g.writeNumberField("resetAfterMillis", ld.resetAfterMillis());
    // The stored limits decide; a request that sent others must hear it, not be ignored.
    if (ld.storedLimitsDiffer()) {
      g.writeStringField("storedLimits", STORED_DIFFER);
    }
    if (ld.limitsMismatch() != null) { // the limits' versions differed: which won, and from what
      g.writeStringField("limitsMismatch", ld.limitsMismatch());
      g.writeNumberField("storedVersion", d.storedVersion());
    }
    if (ld.givenAs() != null) {
      g.writeNumberField(ld.givenAs(), ld.given());
    }
    if (ld.reservation() != null) {
      g.writeStringField("reservation", ld.reservation());
    }
  }

  private static void joint(JsonGenerator g, JointLimiterDecision j) throws IOException {
    JointDecision d = j.joint();
    g.writeBooleanField("allowed", d.allowed());
    g.writeNumberField("permits", j.permits());
    if (d.allowed()) {
      g.writeNullField("refusedBy");
      g.writeNullField("refusedLimit");
    } else {
      g.writeStringField("refusedBy", d.refusedBy());
      g.writeNumberField("refusedLimit", d.refusingLimitIndex());
    }
    retryAfter(g, j.never(), j.retryAfterMillis());
    g.writeArrayFieldStart("limiters");
    for (LimiterDecision ld : j.limiters()) {
      g.writeStartObject();
      decision(g, ld);
      g.writeEndObject();
    }
    g.writeEndArray();
  }

  private static void retryAfter(JsonGenerator g, boolean never, long millis) throws IOException {
    if (never) {
      g.writeNullField("retryAfterMillis"); // the problem's message says why
    } else {
      g.writeNumberField("retryAfterMillis", millis);
    }
  }

  static final String STORED_DIFFER = "differ: this limiter's stored limits decided, not the"
      + " ones sent; reconfigure changes them";

  static String neverMessage(LimiterDecision ld) {
    return ld.permits() + " permits exceed the limit of " + ld.decision().limit()
        + ": this request can never be granted";
  }

  /**
   * The named limits' answer, after envoyproxy/ratelimit's {@code /json} one (the proto3 JSON of
   * {@code RateLimitResponse}), with Tally's additions: which rule matched and where it is
   * written, and {@code storedLimits} when a limiter's stored limits decided instead of the rule.
   */
  private static void named(JsonGenerator g, NamedLimitResult n) throws IOException {
    g.writeStringField("domain", n.outcome().domain());
    g.writeStringField("overallCode", n.outcome().overall().name());
    g.writeArrayFieldStart("statuses");
    List<Status> statuses = n.outcome().statuses();
    for (int i = 0; i < statuses.size(); i++) {
      Status s = statuses.get(i);
      Rule r = s.rule();
      g.writeStartObject();
      g.writeStringField("code", s.code().name());
      g.writeStringField("descriptor", n.descriptors().get(i).toString());
      if (r == null) {
        g.writeNullField("rule");
        g.writeNumberField("limitRemaining", 0);
      } else {
        g.writeStringField("rule", r.path());
        g.writeStringField("source", r.source());
        if (r.unlimited()) {
          g.writeBooleanField("unlimited", true);
          g.writeNumberField("limitRemaining", s.remaining());
        } else {
          g.writeObjectFieldStart("currentLimit");
          if (r.name() != null) {
            g.writeStringField("name", r.name());
          }
          g.writeNumberField("requestsPerUnit", r.requestsPerUnit());
          g.writeStringField("unit", r.unit().name());
          g.writeEndObject();
          g.writeNumberField("limitRemaining", s.remaining());
          g.writeStringField("durationUntilReset", protoDuration(s.resetNanos()));
          g.writeNumberField("durationUntilResetMillis", (s.resetNanos() + 999_999) / 1_000_000);
          if (r.shadowMode()) {
            g.writeBooleanField("shadowMode", true);
          }
          if (s.storedDiffers()) {
            g.writeStringField("storedLimits", "differ: the limiter '" + s.limiter()
                + "' holds a limit of " + s.storedLimit() + ", which decided; something other"
                + " than the rules wrote it");
          }
        }
      }
      g.writeEndObject();
    }
    g.writeEndArray();
  }

  private static boolean enforcedOver(Status s) {
    return s.code() == Code.OVER_LIMIT && s.enforced();
  }

  /** The message of a named-limits denial: the first descriptor over its limit. */
  static String overMessage(NamedLimitResult n) {
    List<Status> statuses = n.outcome().statuses();
    for (int i = 0; i < statuses.size(); i++) {
      if (enforcedOver(statuses.get(i))) {
        Rule r = statuses.get(i).rule();
        return "domain '" + n.outcome().domain() + "': " + n.descriptors().get(i)
            + " is over its limit of " + r.describe() + " (" + r.source() + ")";
      }
    }
    return "domain '" + n.outcome().domain() + "': null";
  }

  /** The longest wait of the enforced denials, in whole seconds rounded up. */
  static long retryAfterSeconds(NamedLimitResult n) {
    long seconds = 0;
    for (Status s : n.outcome().statuses()) {
      if (enforcedOver(s)) {
        seconds = Math.max(seconds, dev.tally.http.RateLimitFields.ceilSeconds(s.resetNanos()));
      }
    }
    return seconds;
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

  /**
   * 64-bit integers as strings, for JavaScript: a JSON number beyond 2^53 loses its last digits
   * in {@code JSON.parse}. {@code int64=string} on any route makes every integer of the body a
   * decimal string.
   */
  private static final class Int64Strings extends JsonGeneratorDelegate {
    Int64Strings(JsonGenerator d) {
      super(d, false);
    }

    @Override
    public void writeNumber(short v) throws IOException {
      delegate.writeString(Short.toString(v));
    }

    @Override
    public void writeNumber(int v) throws IOException {
      delegate.writeString(Integer.toString(v));
    }

    @Override
    public void writeNumber(long v) throws IOException {
      delegate.writeString(Long.toString(v));
    }

    @Override
    public void writeNumber(BigInteger v) throws IOException {
      delegate.writeString(v.toString());
    }
  }
}
