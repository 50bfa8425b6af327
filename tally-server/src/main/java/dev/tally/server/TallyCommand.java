package dev.tally.server;

import com.fasterxml.jackson.databind.JsonNode;
import dev.tally.Tally;
import dev.tally.server.http.Api;
import dev.tally.server.http.Problem;
import dev.tally.server.http.Reply;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.concurrent.CompletionStage;
import java.util.function.Function;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * {@code tally}: the root command, its shared options ({@code --store}, {@code --json}) and the
 * counter commands. Each counter command opens the store, makes one {@link Api} call (the same
 * call the HTTP server makes) and prints its {@link Reply}: the value in plain text, or the HTTP
 * API's JSON body with {@code --json}; the exit code comes from {@link Problem}.
 */
@Command(
    name = "tally",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = {
        "Exact counters and rate limits shared by every thread, process and host.",
        "",
        "Store: --store URI, else $TALLY_STORE, else file:./tally-data."},
    footerHeading = "%nExit codes:%n",
    footer = {
        "  0  ok",
        "  1  no: a limiter denied, or add found a live counter",
        "  2  usage or bad input (the message says what to type instead)",
        "  3  not found: no such counter",
        "  4  store unavailable or timed out",
        "  5  conflict: overflow, or a floating counter read as an integer",
        " 70  internal error (a bug: please report it)",
        "",
        "See docs/cli.md for examples."},
    sortOptions = false,
    usageHelpAutoWidth = true)
final class TallyCommand {
  static final String DEFAULT_STORE = "file:./tally-data";

  @Spec
  CommandSpec spec;

  @Option(names = "--store", scope = ScopeType.INHERIT, paramLabel = "URI",
      defaultValue = "${env:TALLY_STORE:-" + DEFAULT_STORE + "}",
      description = "The store: file:./tally-data (default; or $TALLY_STORE), mem:, null:,"
          + " redis://host:6379, dynamodb://table?region=...")
  String store;

  @Option(names = "--op-id", scope = ScopeType.INHERIT, paramLabel = "ID",
      description = "An operation id for the command's change (1 to 128 printable ASCII"
          + " characters, e.g. a UUID): run again with the same id, it changes nothing and prints"
          + " what the first run printed; the same id on another operation exits 2. HTTP's"
          + " Idempotency-Key.")
  String opId;

  @Option(names = "--json", scope = ScopeType.INHERIT,
      description = "Print JSON: for counter and limiter commands, the body the HTTP API answers.")
  boolean json;

  // ------------------------------------------------------------------ plumbing

  /** Opens the store, runs one call, prints its reply, returns the exit code. */
  int run(Function<Api, CompletionStage<Reply>> call, Function<JsonNode, String> plain) {
    try (Tally tally = Tally.open(store); Api api = new Api(tally, null, null)) {
      return print(call.apply(opId == null ? api : api.withOperationId(opId))
          .toCompletableFuture().join(), plain);
    }
  }

  int print(Reply reply, Function<JsonNode, String> plain) {
    PrintWriter out = spec.commandLine().getOut();
    if (json) {
      out.println(reply.json());
    } else if (reply.problem() == null || reply.problem() == Problem.DENIED) {
      String text = plain.apply(reply.body());
      if (text != null) {
        out.println(text);
      }
    } else {
      spec.commandLine().getErr().println("tally: " + reply.message());
    }
    out.flush();
    return reply.exitCode();
  }

  private static String value(JsonNode body) {
    return body.get("value").asText();
  }

  // ------------------------------------------------------------------ counters

  @Command(mixinStandardHelpOptions = true, name = "incr", description = {
      "Add DELTA (default 1) to a counter and print the new value.",
      "A missing or expired counter starts at --default (0); a live one keeps its expiry.",
      "A decimal DELTA (0.5) makes a floating counter."})
  int incr(
      @Parameters(index = "0", paramLabel = "KEY", description = "The counter, e.g. views:episode:512") String key,
      @Parameters(index = "1", paramLabel = "DELTA", arity = "0..1", defaultValue = "1",
          converter = Converters.NumberConverter.class, description = "How much to add (default 1).") Number delta,
      @Option(names = "--default", paramLabel = "N", defaultValue = "0",
          converter = Converters.NumberConverter.class,
          description = "Start value of a missing counter (default 0).") Number dflt,
      @Option(names = "--must-exist", description = "Never create: exit 3 if the counter is missing.")
          boolean mustExist) {
    return run(api -> api.incr(key, delta, dflt, mustExist), TallyCommand::value);
  }

  @Command(mixinStandardHelpOptions = true, name = "decr", description = {
      "Subtract DELTA (default 1) from a counter and print the new value.",
      "A missing counter becomes --default minus DELTA (the default is not negated)."})
  int decr(
      @Parameters(index = "0", paramLabel = "KEY") String key,
      @Parameters(index = "1", paramLabel = "DELTA", arity = "0..1", defaultValue = "1",
          converter = Converters.NumberConverter.class, description = "How much to subtract (default 1).")
          Number delta,
      @Option(names = "--default", paramLabel = "N", defaultValue = "0",
          converter = Converters.NumberConverter.class,
          description = "Start value of a missing counter (default 0).") Number dflt,
      @Option(names = "--must-exist", description = "Never create: exit 3 if the counter is missing.")
          boolean mustExist) {
    return run(api -> api.decr(key, delta, dflt, mustExist), TallyCommand::value);
  }

  @Command(mixinStandardHelpOptions = true, name = "get", description = "Print a counter's value; exit 3 if it is missing or expired.")
  int get(@Parameters(paramLabel = "KEY") String key) {
    return run(api -> api.get(key), TallyCommand::value);
  }

  @Command(mixinStandardHelpOptions = true, name = "put", description = "Set a counter, with no expiry unless --ttl is given.")
  int put(
      @Parameters(index = "0", paramLabel = "KEY") String key,
      @Parameters(index = "1", paramLabel = "VALUE", converter = Converters.NumberConverter.class)
          Number value,
      @Option(names = "--ttl", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
          description = "Expire after this long: 500ms, 30s, 5m, 2h, 40d, 1h30m.") Duration ttl) {
    return run(api -> api.put(key, value, ttl), body -> null);
  }

  @Command(mixinStandardHelpOptions = true, name = "add", description = {
      "Set a counter only if it is missing or expired (one winner among concurrent callers).",
      "Prints 'added' (exit 0) or 'exists' (exit 1)."})
  int add(
      @Parameters(index = "0", paramLabel = "KEY") String key,
      @Parameters(index = "1", paramLabel = "VALUE", converter = Converters.NumberConverter.class)
          Number value,
      @Option(names = "--ttl", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
          description = "Expire after this long, e.g. 40d.") Duration ttl) {
    try (Tally tally = Tally.open(store); Api api = new Api(tally, null, null)) {
      Reply reply = (opId == null ? api : api.withOperationId(opId)).add(key, value, ttl)
          .toCompletableFuture().join();
      int code = print(reply, body -> body.get("added").asBoolean() ? "added" : "exists");
      return code == 0 && !reply.body().get("added").asBoolean() ? 1 : code;
    }
  }

  @Command(mixinStandardHelpOptions = true, name = "pop", description = "Print a counter's value and delete it, in one atomic step.")
  int pop(@Parameters(paramLabel = "KEY") String key) {
    return run(api -> api.pop(key), TallyCommand::value);
  }

  @Command(mixinStandardHelpOptions = true, name = "del", aliases = "delete", description = "Delete a counter; exit 3 if there was none.")
  int del(@Parameters(paramLabel = "KEY") String key) {
    return run(api -> api.delete(key), body -> null);
  }

  @Command(mixinStandardHelpOptions = true, name = "ttl", description = {
      "Print the time left before a counter expires (e.g. 39d23h), or 'never'.",
      "Exit 3 if the counter is missing."})
  int ttl(@Parameters(paramLabel = "KEY") String key) {
    return run(api -> api.ttl(key), body -> body.get("ttl").isNull() ? "never" : body.get("ttl").asText());
  }

  @Command(mixinStandardHelpOptions = true, name = "touch", description = "Set the expiry of an existing counter; exit 3 if it is missing.")
  int touch(
      @Parameters(paramLabel = "KEY") String key,
      @Option(names = "--ttl", paramLabel = "DURATION", converter = Converters.DurationConverter.class,
          description = "The new expiry, e.g. 1h.") Duration ttl,
      @Option(names = "--never", description = "Make the counter permanent instead.") boolean never) {
    if ((ttl == null) == !never) {
      return usage("touch", "give either --ttl DURATION (e.g. --ttl 1h) or --never");
    }
    return run(api -> api.touch(key, ttl), body -> null);
  }

  @Command(mixinStandardHelpOptions = true, name = "keys", description = "List live counters whose key starts with PREFIX, sorted, one per line.")
  int keys(@Parameters(paramLabel = "PREFIX", arity = "0..1", defaultValue = "",
      description = "Key prefix (default: every key).") String prefix) {
    return run(api -> api.keys(prefix, Integer.MAX_VALUE), body -> {
      StringBuilder b = new StringBuilder();
      body.get("keys").forEach(k -> b.append(b.length() == 0 ? "" : "\n").append(k.asText()));
      return b.length() == 0 ? null : b.toString();
    });
  }

  int usage(String command, String message) {
    spec.commandLine().getErr().println("tally " + command + ": " + message);
    return Problem.BAD_REQUEST.exitCode();
  }
}
