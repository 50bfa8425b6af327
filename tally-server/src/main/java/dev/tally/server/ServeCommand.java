package dev.tally.server;

import dev.tally.CircuitBreaker;
import dev.tally.Durations;
import dev.tally.server.app.FailurePolicies;
import dev.tally.server.app.Problem;
import dev.tally.server.http.TallyServer;
import dev.tally.server.ratelimit.NamedLimits;
import dev.tally.server.ratelimit.Rules;
import dev.tally.server.ratelimit.RulesException;
import java.io.IOException;
import java.io.PrintWriter;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.TypeConversionException;

/** {@code tally serve}: the HTTP/JSON API over the store, until SIGTERM or Ctrl-C. */
@Command(name = "serve", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Serve the store over HTTP/JSON (see docs/http.md and docs/openapi.yaml).",
        "Prints 'listening on http://HOST:PORT' once ready. On SIGTERM or Ctrl-C, finishes the",
        "requests in flight (up to --shutdown-grace), then exits.",
        "Listening on any address but loopback requires a bearer token.",
        "With --rules, also checks an operator's named limits (POST /v1/ratelimit/DOMAIN) and,",
        "with --grpc-port, serves them as Envoy's rate limit service, printing",
        "'grpc listening on HOST:PORT' (see docs/envoy.md)."})
final class ServeCommand implements Callable<Integer> {
  @ParentCommand
  TallyCommand root;

  @Option(names = "--bind", paramLabel = "ADDRESS", defaultValue = "127.0.0.1",
      description = "Address to listen on (default 127.0.0.1). Anything else needs a token.")
  String bind;

  @Option(names = "--port", paramLabel = "PORT", defaultValue = "8080",
      description = "Port (default 8080; 0 picks a free one).")
  int port;

  @Option(names = "--token-file", paramLabel = "FILE",
      description = "File holding the bearer token clients must send (else $TALLY_TOKEN).")
  Path tokenFile;

  @Option(names = "--threads", paramLabel = "N",
      description = "Event-loop threads (default one per two cores, at least one).")
  Integer threads;

  @Option(names = "--request-timeout", paramLabel = "DURATION", defaultValue = "10s",
      description = "How long one request may take to arrive, first byte to last; slower ones get"
          + " 408 and are closed (default 10s).")
  Duration requestTimeout;

  @Option(names = "--idle-timeout", paramLabel = "DURATION", defaultValue = "60s",
      description = "Close a connection idle this long (default 60s).")
  Duration idleTimeout;

  @Option(names = "--allow-host", paramLabel = "NAME",
      description = "A Host name besides localhost that requests may carry without a token"
          + " (repeatable); others get 403, as DNS rebinding would send them.")
  List<String> allowHosts = new ArrayList<>();

  @Option(names = "--cors-origin", paramLabel = "ORIGIN",
      description = "A web origin (https://app.example.com) that may call the server from a"
          + " browser, with CORS (repeatable). No other page may.")
  List<String> corsOrigins = new ArrayList<>();

  @Option(names = "--access-log", description = "Log one line per request to stderr.")
  boolean accessLog;

  @Option(names = "--require-idempotency-key",
      description = "Refuse (400) requests that change something without an Idempotency-Key.")
  boolean requireIdempotencyKey;

  @Option(names = "--tls-cert", paramLabel = "FILE",
      description = "Serve HTTPS (HTTP/2 or HTTP/1.1 by ALPN) with this PEM certificate chain,"
          + " and TLS on --grpc-port too (ALPN h2).")
  Path tlsCert;

  @Option(names = "--tls-key", paramLabel = "FILE",
      description = "The PEM (PKCS#8) private key of --tls-cert.")
  Path tlsKey;

  @Option(names = "--max-body", paramLabel = "BYTES", defaultValue = "65536",
      description = "Largest request body accepted, at most 16777216; larger ones get 413 (default 65536).")
  int maxBody;

  @Option(names = "--shutdown-grace", paramLabel = "DURATION", defaultValue = "10s",
      description = "How long shutdown waits for requests in flight (default 10s).")
  Duration shutdownGrace;

  @Option(names = "--failure-policy", paramLabel = "POLICY", defaultValue = "throw",
      description = "When the store fails: throw (answer 503, default), fail-open (counters answer"
          + " default+delta, limiters allow) or fail-closed (limiters deny); per group as"
          + " limiters=POLICY,counters=POLICY (counters cannot fail closed).")
  FailurePolicies failurePolicy;

  @Option(names = "--circuit-breaker", paramLabel = "FAILURES/OPEN_FOR", defaultValue = "5/1s",
      converter = BreakerConverter.class,
      description = "After this many store failures in a row, answer by the failure policy at once"
          + " for OPEN_FOR, then probe the store in the background (default 5/1s); off to always wait"
          + " for the store.")
  CircuitBreaker circuitBreaker;

  @Option(names = "--rules", paramLabel = "FILE_OR_DIR",
      description = "Rules in envoyproxy/ratelimit's YAML format: a file, or a directory whose"
          + " *.yaml files are read (repeatable). Read again when they change; a bad file is"
          + " refused and the rules in force stay.")
  List<Path> rules = new ArrayList<>();

  @Option(names = "--grpc-port", paramLabel = "PORT",
      description = "Serve the rules as Envoy's rate limit service (gRPC) on this port of"
          + " --bind (0 picks a free one). Needs --rules. Over TLS (ALPN h2) with --tls-cert and"
          + " --tls-key, else cleartext HTTP/2.")
  Integer grpcPort;

  @Option(names = "--rules-poll", paramLabel = "DURATION", defaultValue = "1s",
      description = "How often the rules files are checked for changes (default 1s).")
  Duration rulesPoll;

  @Option(names = "--no-rls-headers",
      description = "Leave out the x-ratelimit-limit, -remaining and -reset header fields that"
          + " gRPC answers carry for Envoy to add to its responses.")
  boolean noRlsHeaders;

  @Option(names = "--rls-all-or-nothing",
      description = "Decide a request's descriptors all or nothing: the enforced ones in one joint"
          + " decision, so a refused request takes nothing from the others (default: each counted"
          + " alone, as envoyproxy/ratelimit does). Not on Redis Cluster.")
  boolean rlsAllOrNothing;

  static final class BreakerConverter implements ITypeConverter<CircuitBreaker> {
    @Override
    public CircuitBreaker convert(String value) throws Exception {
      if (value.equalsIgnoreCase("off")) {
        return CircuitBreaker.DISABLED;
      }
      int slash = value.indexOf('/');
      if (slash < 0) {
        throw new TypeConversionException("'" + value + "' is not FAILURES/OPEN_FOR (e.g. 5/1s) nor off");
      }
      int failures;
      try {
        failures = Integer.parseInt(value.substring(0, slash));
      } catch (NumberFormatException e) {
        throw new TypeConversionException("'" + value.substring(0, slash) + "' is not a number of failures;"
            + " write e.g. 5/1s");
      }
      Duration openFor = Converters.of(Durations::parse).convert(value.substring(slash + 1));
      try {
        return CircuitBreaker.of(failures, openFor);
      } catch (IllegalArgumentException e) {
        throw new TypeConversionException("--circuit-breaker " + value + ": " + e.getMessage());
      }
    }
  }

  @Override
  public Integer call() throws Exception {
    String token = token();
    TallyServer.Settings settings = new TallyServer.Settings(bind, port, token,
        threads == null ? TallyServer.Settings.defaultThreads() : threads, maxBody, shutdownGrace,
        requestTimeout, idleTimeout, allowHosts, corsOrigins, accessLog, tlsCert, tlsKey,
        requireIdempotencyKey, circuitBreaker);
    String needsRules = !rules.isEmpty() ? null : grpcPort != null ? "--grpc-port serves"
        : rlsAllOrNothing ? "--rls-all-or-nothing decides" : null;
    if (needsRules != null) {
      root.note("tally serve: " + needsRules + " the named limits of rules files: add --rules"
          + " FILE_OR_DIR (see docs/envoy.md)");
      return Problem.BAD_REQUEST.exitCode();
    }
    if (rlsAllOrNothing) {
      NamedLimits.requireJointDecisions(root.store); // before the rules are watched
    }
    Rules loaded = null;
    if (!rules.isEmpty()) {
      try {
        loaded = Rules.load(rules);
      } catch (RulesException e) {
        root.note("tally serve: " + e.getMessage());
        return Problem.BAD_REQUEST.exitCode();
      }
      loaded.watch(rulesPoll);
    }
    Rules named = loaded;
    TallyServer server;
    try {
      server = TallyServer.start(root.store, failurePolicy, settings, named == null ? null
          : new TallyServer.NamedLimitSettings(named, grpcPort, !noRlsHeaders, rlsAllOrNothing));
    } catch (IOException e) {
      if (named != null) {
        named.close();
      }
      root.note("tally serve: cannot listen on " + bind + ":" + port + ": " + e.getMessage()
          + "; choose another --port or --bind");
      return Problem.BAD_REQUEST.exitCode();
    }
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      if (named != null) {
        named.close();
      }
      // Not through the logger: java.util.logging closes its handlers during shutdown.
      root.note("tally serve: stopped");
    }, "tally-shutdown"));
    PrintWriter out = root.out();
    out.println("listening on " + server.uri());
    InetSocketAddress grpc = server.grpcAddress();
    if (grpc != null) {
      out.println("grpc listening on " + TallyServer.hostPort(grpc));
    }
    out.flush();
    server.awaitClosed();
    return 0;
  }

  private String token() throws IOException {
    if (tokenFile != null) {
      if (!Files.isReadable(tokenFile)) {
        throw new IllegalArgumentException("cannot read --token-file " + tokenFile);
      }
      String t = Files.readString(tokenFile).strip();
      if (t.isEmpty()) {
        throw new IllegalArgumentException("--token-file " + tokenFile + " is empty; write a token"
            + " into it, e.g. openssl rand -hex 32 > " + tokenFile);
      }
      try {
        Set<PosixFilePermission> perms = Files.getPosixFilePermissions(tokenFile);
        if (perms.contains(PosixFilePermission.OTHERS_READ) || perms.contains(PosixFilePermission.GROUP_READ)) {
          root.note("tally serve: warning: " + tokenFile + " is readable by other users;"
              + " chmod 600 it");
        }
      } catch (UnsupportedOperationException notPosix) {
        // nothing to check
      }
      return t;
    }
    String env = System.getenv("TALLY_TOKEN");
    return env == null || env.isBlank() ? null : env.strip();
  }
}
