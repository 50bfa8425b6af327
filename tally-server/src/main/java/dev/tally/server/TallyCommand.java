package dev.tally.server;

import dev.tally.Bounds;
import dev.tally.Durations;
import dev.tally.Tally;
import dev.tally.server.app.Added;
import dev.tally.server.app.BoundedValue;
import dev.tally.server.app.CounterTtl;
import dev.tally.server.app.CounterValue;
import dev.tally.server.app.Health;
import dev.tally.server.app.KeyList;
import dev.tally.server.app.Problem;
import dev.tally.server.app.TallyApp;
import dev.tally.server.http.Reply;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.spi.OperationId;
import java.io.InputStream;
import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletionStage;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ScopeType;
import picocli.CommandLine.Spec;

/**
 * {@code tally}: the root command, its shared options ({@code --store}, {@code --json}) and the
 * counter commands. Each counter command opens the store, makes one {@link TallyApp} call (the
 * same call the HTTP server makes) and prints its result: the value in plain text, or, with
 * {@code --json}, the HTTP API's JSON body ({@link Reply}); the exit code comes from
 * {@link Problem}.
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
        "  3  not found: no such counter, or a lease released or expired",
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
      description = "Print JSON: for counter, transaction and limiter commands, the body the"
          + " HTTP API answers.")
  boolean json;

  /** The output of this command and its subcommands (picocli gives them the same streams). */
  PrintWriter out() {
    return spec.commandLine().getOut();
  }

  /** Where {@code -} reads keys from: stdin, unless {@link Main} was given another stream. */
  InputStream stdin = System.in;

  // ------------------------------------------------------------------ plumbing

  <T> int run(Function<TallyApp, CompletionStage<T>> call, Function<T, String> plain) {
    return run(tally -> null, call, plain);
  }

  /** {@link #run(Function, Function)} on an app that checks the named limits made on the store. */
  <T> int run(Function<Tally, NamedLimits> namedLimits, Function<TallyApp, CompletionStage<T>> call,
      Function<T, String> plain) {
    try (Tally tally = Tally.open(store);
        TallyApp app = new TallyApp(tally, null, null, namedLimits.apply(tally))) {
      return print(reply(call.apply(opId == null ? app : app.withOperationId(opId))), plain);
    }
  }

  private static Reply reply(CompletionStage<?> call) {
    return call.handle((v, e) -> e != null ? Reply.error(e) : Reply.of(v))
        .toCompletableFuture().join();
  }

  /**
   * Runs {@code call} on the key {@code arg}, or, for {@code -}, on each key of stdin in turn,
   * printing each result as it comes. Every line is read and checked first, and so is each line's
   * operation id ({@code --op-id ID} gives line N the id {@code ID/N}, so that the same input run
   * again replays line by line), so bad input changes nothing. A key's own outcome (denied, not
   * found, a conflict) does not stop the others; a failure that would fail every key alike (the
   * store, the usage) does. The exit code is the first key's that was not 0, else 0.
   */
  <T> int runEach(String arg, StdinArgument.What what,
      BiFunction<TallyApp, String, CompletionStage<T>> call, Function<T, String> plain,
      ToIntFunction<Reply> exitCode) {
    boolean fromStdin = StdinArgument.isStdin(spec.commandLine(), arg);
    List<String> keys = fromStdin ? StdinArgument.lines(stdin, what) : List.of(arg);
    if (fromStdin && opId != null) {
      int room = OperationId.MAX_LENGTH - 1 - Integer.toString(keys.size()).length();
      if (opId.length() > room) {
        throw new IllegalArgumentException("--op-id with '-' gets /N appended for line N (here up"
            + " to /" + keys.size() + "), so it must be at most " + room + " characters, not "
            + opId.length());
      }
    }
    try (Tally tally = Tally.open(store); TallyApp app = new TallyApp(tally, null, null, null)) {
      List<TallyApp> views = new ArrayList<>(keys.size());
      for (int i = 0; i < keys.size(); i++) {
        views.add(opId == null ? app
            : app.withOperationId(fromStdin ? opId + "/" + (i + 1) : opId));
      }
      int code = 0;
      for (int i = 0; i < keys.size(); i++) {
        Reply reply = reply(call.apply(views.get(i), keys.get(i)));
        print(reply, plain);
        int c = exitCode.applyAsInt(reply);
        code = code == 0 ? c : code;
        if (!OWN_OUTCOMES.contains(reply.problem() == null ? "" : reply.problem().code())) {
          break;
        }
      }
      return code;
    }
  }

  /** The outcomes that belong to one key: the next key may well fare otherwise. */
  private static final Set<String> OWN_OUTCOMES = Set.of("", Problem.DENIED.code(),
      Problem.NOT_FOUND.code(), Problem.CONFLICT.code());

  <T> int runEach(String arg, BiFunction<TallyApp, String, CompletionStage<T>> call,
      Function<T, String> plain) {
    return runEach(arg, StdinArgument.What.KEYS, call, plain, Reply::exitCode);
  }

  /** Prints the result in plain text, or with --json the HTTP body; a problem goes to stderr. */
  @SuppressWarnings("unchecked") // the reply carries the result of the call plain was given for
  private <T> int print(Reply reply, Function<T, String> plain) {
    PrintWriter out = out();
    if (json) {
      out.println(reply.json());
    } else if (reply.problem() == null || reply.problem() == Problem.DENIED) {
      String text = plain.apply((T) reply.result());
      if (text != null) {
        out.println(text);
      }
    } else {
      note("tally: " + reply.message());
    }
    out.flush();
    return reply.exitCode();
  }

  /** {@code line} on stderr at once, where it does not mix with the output; null: nothing. */
  void note(String line) {
    if (line != null) {
      PrintWriter err = spec.commandLine().getErr();
      err.println(line);
      err.flush();
    }
  }

  private static String value(CounterValue c) {
    return c.value().toString();
  }

  // ------------------------------------------------------------------ counters

  private static final String KEY = "The counter, e.g. views:episode:512; - reads keys from stdin,"
      + " one per line (-- - for a key named -).";

  @Command(mixinStandardHelpOptions = true, name = "incr", description = {
      "Add DELTA (default 1) to a counter and print the new value.",
      "A missing or expired counter starts at --default (0); a live one keeps its expiry.",
      "A decimal DELTA (0.5) makes a floating counter."})
  int incr(
      @Parameters(index = "0", paramLabel = "KEY", description = KEY) String key,
      @Parameters(index = "1", paramLabel = "DELTA", arity = "0..1", defaultValue = "1",
          description = "How much to add (default 1).") Number delta,
      @Mixin StepOptions step) {
    return step(key, delta, step, false);
  }

  /** The options incr and decr share. */
  static final class StepOptions {
    @Option(names = "--default", paramLabel = "N", defaultValue = "0",
        description = "Start value of a missing counter (default 0).")
    Number dflt;

    @Option(names = "--must-exist", description = "Never create: exit 3 if the counter is missing.")
    boolean mustExist;

    @Option(names = "--min", paramLabel = "N", description = "Never go below N: refuse (exit 1,"
        + " printing the value kept) or, with --saturate, stop at N.")
    Long min;

    @Option(names = "--max", paramLabel = "N", description = "Never go above N: refuse (exit 1,"
        + " printing the value kept) or, with --saturate, stop at N.")
    Long max;

    @Option(names = "--saturate", description = "Set the counter to the bound it would cross"
        + " instead of refusing.")
    boolean saturate;

    boolean bounded() {
      return min != null || max != null || saturate;
    }

    /** @throws IllegalArgumentException if min > max */
    Bounds bounds() {
      Bounds b = Bounds.between(min == null ? Long.MIN_VALUE : min, max == null ? Long.MAX_VALUE : max);
      return saturate ? b.saturate() : b;
    }
  }

  private int step(String key, Number delta, StepOptions options, boolean negate) {
    Number dflt = options.dflt;
    if (!options.bounded()) {
      return runEach(key, (app, k) -> negate ? app.decr(k, delta, dflt, options.mustExist)
          : app.incr(k, delta, dflt, options.mustExist), TallyCommand::value);
    }
    String command = negate ? "decr" : "incr";
    if (options.mustExist) {
      return usage(command, "--must-exist cannot be combined with --min, --max or --saturate");
    }
    if (delta instanceof Double || dflt instanceof Double) {
      return usage(command, "--min and --max work on integer counters: give an integer DELTA and --default");
    }
    if (options.min == null && options.max == null) {
      return usage(command, "--saturate needs a bound: add --min, --max or both");
    }
    Bounds b;
    try {
      b = options.bounds();
    } catch (IllegalArgumentException e) {
      return usage(command, e.getMessage());
    }
    return runEach(key, StdinArgument.What.KEYS,
        (app, k) -> app.incrWithin(k, delta.longValue(), dflt.longValue(), b, negate),
        (BoundedValue v) -> Long.toString(v.value()),
        reply -> reply.result() instanceof BoundedValue v && !v.applied() ? 1 : reply.exitCode());
  }

  @Command(mixinStandardHelpOptions = true, name = "decr", description = {
      "Subtract DELTA (default 1) from a counter and print the new value.",
      "A missing counter becomes --default minus DELTA (the default is not negated)."})
  int decr(
      @Parameters(index = "0", paramLabel = "KEY", description = KEY) String key,
      @Parameters(index = "1", paramLabel = "DELTA", arity = "0..1", defaultValue = "1",
          description = "How much to subtract (default 1).") Number delta,
      @Mixin StepOptions step) {
    return step(key, delta, step, true);
  }

  @Command(mixinStandardHelpOptions = true, name = "get", description = "Print a counter's value; exit 3 if it is missing or expired.")
  int get(@Parameters(paramLabel = "KEY", description = KEY) String key) {
    return runEach(key, TallyApp::get, TallyCommand::value);
  }

  @Command(mixinStandardHelpOptions = true, name = "put", description = "Set a counter, with no expiry unless --ttl is given.")
  int put(
      @Parameters(index = "0", paramLabel = "KEY", description = KEY) String key,
      @Parameters(index = "1", paramLabel = "VALUE")
          Number value,
      @Option(names = "--ttl", paramLabel = "DURATION", description = "Expire after this long: 500ms, 30s, 5m, 2h, 40d, 1h30m.") Duration ttl) {
    return runEach(key, (app, k) -> app.put(k, value, ttl), body -> null);
  }

  @Command(mixinStandardHelpOptions = true, name = "add", description = {
      "Set a counter only if it is missing or expired (one winner among concurrent callers).",
      "Prints 'added' (exit 0) or 'exists' (exit 1)."})
  int add(
      @Parameters(index = "0", paramLabel = "KEY", description = KEY) String key,
      @Parameters(index = "1", paramLabel = "VALUE")
          Number value,
      @Option(names = "--ttl", paramLabel = "DURATION", description = "Expire after this long, e.g. 40d.") Duration ttl) {
    return runEach(key, StdinArgument.What.KEYS, (app, k) -> app.add(k, value, ttl),
        (Added a) -> a.added() ? "added" : "exists",
        reply -> reply.result() instanceof Added a && !a.added() ? 1 : reply.exitCode());
  }

  @Command(mixinStandardHelpOptions = true, name = "pop", description = "Print a counter's value and delete it, in one atomic step.")
  int pop(@Parameters(paramLabel = "KEY", description = KEY) String key) {
    return runEach(key, TallyApp::pop, TallyCommand::value);
  }

  @Command(mixinStandardHelpOptions = true, name = "del", aliases = "delete", description = "Delete a counter; exit 3 if there was none.")
  int del(@Parameters(paramLabel = "KEY", description = KEY) String key) {
    return runEach(key, TallyApp::delete, body -> null);
  }

  @Command(mixinStandardHelpOptions = true, name = "ttl", description = {
      "Print the time left before a counter expires (e.g. 39d23h), or 'never'.",
      "Exit 3 if the counter is missing."})
  int ttl(@Parameters(paramLabel = "KEY", description = KEY) String key) {
    return runEach(key, TallyApp::ttl, (CounterTtl t) -> t.ttl() == null ? "never" : t.text());
  }

  @Command(mixinStandardHelpOptions = true, name = "touch", description = "Set the expiry of an existing counter; exit 3 if it is missing.")
  int touch(
      @Parameters(paramLabel = "KEY", description = KEY) String key,
      @Option(names = "--ttl", paramLabel = "DURATION", description = "The new expiry, e.g. 1h.") Duration ttl,
      @Option(names = "--never", description = "Make the counter permanent instead.") boolean never) {
    if ((ttl == null) == !never) {
      return usage("touch", "give either --ttl DURATION (e.g. --ttl 1h) or --never");
    }
    return runEach(key, (app, k) -> app.touch(k, ttl), body -> null);
  }

  @Command(mixinStandardHelpOptions = true, name = "keys", description = {
      "List live counters whose key starts with PREFIX, sorted, one per line.",
      "(PREFIX is taken as written: 'tally keys -' lists the keys that start with '-'.)"})
  int keys(
      @Parameters(paramLabel = "PREFIX", arity = "0..1", defaultValue = "",
          description = "Key prefix (default: every key).") String prefix,
      @Option(names = "--limit", paramLabel = "N",
          description = "List at most N keys (the first N in order); a note on stderr says when"
              + " more match.") Integer limit) {
    if (limit != null && limit < 1) {
      return usage("keys", "--limit must be 1 or more, not " + limit);
    }
    return run(app -> app.keys(prefix, null, limit == null ? Integer.MAX_VALUE : limit), (KeyList list) -> {
      StringBuilder b = new StringBuilder();
      list.keys().forEach(k -> b.append(b.length() == 0 ? "" : "\n").append(k));
      if (list.truncated()) {
        note("tally keys: more keys" + (prefix.isEmpty() ? "" : " start with '" + prefix + "'")
            + " than the " + limit + " listed; raise --limit to see them");
      }
      return b.length() == 0 ? null : b.toString();
    });
  }

  // ------------------------------------------------------------------ store

  @Command(mixinStandardHelpOptions = true, name = "health", description = {
      "Read one key from the store, as the server's /healthz does, and print how long it took.",
      "Exit 4 if the store cannot be reached."})
  int health() {
    return run(TallyApp::health, (Health h) -> "ok store=" + h.store() + " latency="
        + Durations.format(Duration.ofNanos(h.latencyMicros() * 1000)));
  }

  /** A usage error found by a command itself: one line on stderr, or with --json the body. */
  int usage(String command, String message) {
    return Main.fail(spec.commandLine(), Reply.error(Problem.BAD_REQUEST, message),
        "tally " + command + ": " + message);
  }
}
