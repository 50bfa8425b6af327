package dev.tally.server;

import dev.tally.Durations;
import dev.tally.server.app.ConcurrencyInUse;
import dev.tally.server.app.ConcurrencyLease;
import dev.tally.server.app.LeaseReleased;
import java.time.Duration;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code tally concurrency acquire|renew|release|in-use NAME --max-permits N ...}: the concurrency
 * routes of the HTTP API, one subcommand each, through the same {@code TallyApp} calls.
 */
@Command(
    name = "concurrency",
    description = {
        "Concurrency limits: at most --max-permits permits held at once on a name, by leases",
        "that expire. Exit 1 when acquire gets no permit in time, 3 when renew finds the lease",
        "released or expired."},
    mixinStandardHelpOptions = true)
final class ConcurrencyCommand {
  @ParentCommand
  TallyCommand root;

  private static final String NAME = "The concurrency limit, e.g. exports:tenant:42.";

  @Command(name = "acquire", mixinStandardHelpOptions = true, description = {
      "Lease permits for --ttl, waiting up to --max-wait for them; print the lease's id",
      "(what renew and release take) and fencing token. Exit 1 if none came in time."})
  int acquire(
      @Parameters(paramLabel = "NAME", description = NAME) String name,
      @Option(names = "--max-permits", paramLabel = "N", required = true,
          description = "The most permits held at once on the name.") long maxPermits,
      @Option(names = "--weight", paramLabel = "N", defaultValue = "1",
          description = "How many permits to lease (default 1).") long weight,
      @Option(names = "--ttl", paramLabel = "DURATION", required = true,
          description = "How long the lease holds unless renewed or released, e.g. 5m.") Duration ttl,
      @Option(names = "--max-wait", paramLabel = "DURATION", defaultValue = "0s",
          description = "The longest to wait, e.g. 2s (default 0s: do not wait).") Duration maxWait) {
    return root.run(app -> app.acquireLease(name, maxPermits, weight, ttl, maxWait),
        (ConcurrencyLease l) -> l == null ? "denied" : plain(l));
  }

  @Command(name = "renew", mixinStandardHelpOptions = true, description = {
      "Extend a lease to --ttl from now. Exit 3 if it was released or has expired."})
  int renew(
      @Parameters(index = "0", paramLabel = "NAME", description = NAME) String name,
      @Parameters(index = "1", paramLabel = "LEASE_ID", description = "The id acquire printed.") String id,
      @Option(names = "--max-permits", paramLabel = "N", required = true) long maxPermits,
      @Option(names = "--ttl", paramLabel = "DURATION", required = true) Duration ttl) {
    return root.run(app -> app.renewLease(name, maxPermits, id, ttl), ConcurrencyCommand::plain);
  }

  @Command(name = "release", mixinStandardHelpOptions = true, description = {
      "Give a lease's permits back; print released, or not-held if it was released or had",
      "expired already (exit 0 either way)."})
  int release(
      @Parameters(index = "0", paramLabel = "NAME", description = NAME) String name,
      @Parameters(index = "1", paramLabel = "LEASE_ID", description = "The id acquire printed.") String id,
      @Option(names = "--max-permits", paramLabel = "N", required = true) long maxPermits) {
    return root.run(app -> app.releaseLease(name, maxPermits, id),
        (LeaseReleased r) -> r.released() ? "released" : "not-held");
  }

  @Command(name = "in-use", mixinStandardHelpOptions = true,
      description = "Print the permits held by unexpired leases.")
  int inUse(
      @Parameters(paramLabel = "NAME", description = NAME) String name,
      @Option(names = "--max-permits", paramLabel = "N", required = true) long maxPermits) {
    return root.run(app -> app.leasesInUse(name, maxPermits), (ConcurrencyInUse u) -> Long.toString(u.inUse()));
  }

  /** {@code lease id=17.5f3a… fencing-token=17 weight=1 expires-in=5m}. */
  static String plain(ConcurrencyLease l) {
    return "lease id=" + l.id() + " fencing-token=" + l.fencingToken()
        + (l.weight() > 0 ? " weight=" + l.weight() : "") + " expires-in="
        + Durations.format(Duration.ofMillis(l.expiresInMillis()));
  }
}
