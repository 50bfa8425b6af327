package dev.tally.server;

import dev.tally.server.app.JointLimiterDecision;
import dev.tally.server.app.LimiterDecision;
import dev.tally.server.app.TallyApp;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

/**
 * {@code tally decide --limiter user:42 --token-bucket 100/1m --limiter tenant:7 --quota
 * 1000/month}: one decision across several limiters, all or nothing, as
 * {@code POST /v1/limiters:decide} makes it.
 */
@Command(name = "decide", mixinStandardHelpOptions = true, sortOptions = false,
    description = {
        "Take permits from every limiter if every one allows, else from none: one atomic",
        "decision across keys (\"user AND tenant AND global\"). Give each limiter as --limiter",
        "NAME followed by its limits. Prints the joint answer, then a line per limiter.",
        "Exit 0 when allowed, 1 when denied."})
final class DecideCommand implements Callable<Integer> {
  @ParentCommand
  TallyCommand root;

  static final class Limiter extends LimitCommand.Limits {
    @Option(names = "--limiter", paramLabel = "NAME", required = true,
        description = "A limiter, e.g. api:user:42; the limit options after it are its own.")
    String name;
  }

  @ArgGroup(exclusive = false, multiplicity = "1..*")
  List<Limiter> limiters = new ArrayList<>();

  @Option(names = "--permits", paramLabel = "N", defaultValue = "1",
      description = "How many to take from each limiter (default 1).")
  long permits;

  @Override
  public Integer call() {
    List<TallyApp.JointLimiter> joint = new ArrayList<>(limiters.size());
    for (Limiter l : limiters) {
      try {
        joint.add(new TallyApp.JointLimiter(l.name, l.specs(), l.version));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException("--limiter " + l.name + ": " + e.getMessage());
      }
    }
    return root.run(app -> app.decide(joint, permits), this::plain);
  }

  /**
   * {@code denied refused-by=tenant:7 retry-after=2s}, then each limiter's line as
   * {@code tally limit try} prints it, after its name; its notes on stderr.
   */
  private String plain(JointLimiterDecision j) {
    StringBuilder b = new StringBuilder(j.joint().allowed() ? "allowed" : "denied refused-by="
        + j.joint().refusedBy() + " retry-after="
        + (j.never() ? "never" : LimitCommand.human(j.retryAfterMillis())));
    for (LimiterDecision d : j.limiters()) {
      root.note(LimitCommand.note(d, true));
      b.append('\n').append(d.name()).append(' ').append(LimitCommand.plain(d));
    }
    return b.toString();
  }
}
