package dev.tally.server;

import dev.tally.server.app.Problem;
import dev.tally.server.http.Reply;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.Charset;
import picocli.CommandLine;
import picocli.CommandLine.IVersionProvider;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.UnmatchedArgumentException;

/**
 * The {@code tally} command line: {@code tally incr KEY}, {@code tally limit try NAME ...},
 * {@code tally serve}, {@code tally bench}. See {@code docs/cli.md}.
 */
public final class Main {
  private Main() {}

  public static void main(String[] args) {
    if (System.getProperty("java.util.logging.SimpleFormatter.format") == null) {
      System.setProperty("java.util.logging.SimpleFormatter.format",
          "%1$tFT%1$tT.%1$tL %4$s %3$s: %5$s%6$s%n");
    }
    System.exit(run(args, new PrintWriter(System.out, true, Charset.defaultCharset()),
        new PrintWriter(System.err, true, Charset.defaultCharset())));
  }

  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    return run(args, System.in, out, err);
  }

  /** Runs the command line with these streams ({@code in} is what {@code -} reads). */
  public static int run(String[] args, InputStream in, PrintWriter out, PrintWriter err) {
    CommandLine cli = commandLine();
    ((TallyCommand) cli.getCommand()).stdin = in;
    cli.setOut(out);
    cli.setErr(err);
    return cli.execute(args);
  }

  static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new TallyCommand());
    // After the counter commands (the @Command methods), so --help lists those first.
    cli.addSubcommand(new TransactionCommand());
    cli.addSubcommand(new LimitCommand());
    cli.addSubcommand(new DecideCommand());
    cli.addSubcommand(new RateLimitCommand());
    cli.addSubcommand(new ConcurrencyCommand());
    cli.addSubcommand(new ServeCommand());
    cli.addSubcommand(new BenchCommand());
    cli.addSubcommand(new SchemaCommand());
    cli.addSubcommand(new FlushCommand());
    cli.addSubcommand(new CompletionCommand());
    Converters.register(cli); // after the subcommands: picocli gives them the converters it has then
    cli.setParameterExceptionHandler(Main::badUsage);
    cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
      Problem problem = Problem.of(e);
      if (json(commandLine)) { // the body the HTTP API would answer, as for errors it returns
        commandLine.getOut().println(Reply.error(e).json());
        commandLine.getOut().flush();
        return problem.exitCode();
      }
      String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
      if (problem == Problem.INTERNAL) {
        e.printStackTrace(commandLine.getErr());
      }
      commandLine.getErr().println("tally: " + message);
      commandLine.getErr().flush();
      return problem.exitCode();
    });
    return cli;
  }

  /** One line: what was wrong, what to type instead, where the help is. */
  private static int badUsage(ParameterException e, String[] args) {
    CommandLine cl = e.getCommandLine();
    String message = e.getMessage();
    if (e instanceof UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
      String arg = u.getUnmatched().get(0);
      boolean option = arg.startsWith("-");
      boolean command = !cl.getSubcommands().isEmpty() && !option;
      String near = closest(arg, option ? cl.getCommandSpec().optionsMap().keySet()
          : cl.getSubcommands().keySet());
      message = "unknown " + (option ? "option" : command ? "command" : "argument") + " '" + arg
          + "'" + (near == null || !(option || command) ? "" : "; did you mean '" + near + "'?");
    }
    message = lowerFirst(message) + " (see '" + cl.getCommandSpec().qualifiedName() + " --help')";
    return fail(cl, Reply.error(Problem.BAD_REQUEST, message), prefix(cl) + message);
  }

  /**
   * Says why a command failed: with {@code --json} the body the HTTP API would answer, else
   * {@code line} on stderr. Returns the exit code.
   */
  static int fail(CommandLine cl, Reply reply, String line) {
    PrintWriter w = json(cl) ? cl.getOut() : cl.getErr();
    w.println(json(cl) ? reply.json() : line);
    w.flush();
    return reply.exitCode();
  }

  /** Whether {@code --json} was given (it belongs to the root command, whatever the subcommand). */
  private static boolean json(CommandLine cl) {
    while (cl.getParent() != null) {
      cl = cl.getParent();
    }
    return cl.getCommand() instanceof TallyCommand root && root.json;
  }

  /** The name within two edits (insert, delete, replace, swap) of {@code typed}, if any. */
  static String closest(String typed, java.util.Collection<String> names) {
    String best = null;
    int bestDistance = 3;
    for (String name : names) {
      int d = distance(typed, name);
      if (d < bestDistance) {
        best = name;
        bestDistance = d;
      }
    }
    return best;
  }

  /** Optimal string alignment distance: Levenshtein plus adjacent transpositions. */
  static int distance(String a, String b) {
    int[][] d = new int[a.length() + 1][b.length() + 1];
    for (int i = 0; i <= a.length(); i++) {
      d[i][0] = i;
    }
    for (int j = 0; j <= b.length(); j++) {
      d[0][j] = j;
    }
    for (int i = 1; i <= a.length(); i++) {
      for (int j = 1; j <= b.length(); j++) {
        int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
        d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
        if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1)) {
          d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
        }
      }
    }
    return d[a.length()][b.length()];
  }

  private static String prefix(CommandLine cl) {
    return cl.getCommandSpec().qualifiedName() + ": ";
  }

  private static String lowerFirst(String s) {
    return s == null || s.isEmpty() ? "bad usage" : Character.toLowerCase(s.charAt(0)) + s.substring(1);
  }

  static final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = Main.class.getPackage().getImplementationVersion();
      return new String[] {"tally " + (v == null ? "(development build)" : v)
          + " on Java " + System.getProperty("java.version")};
    }
  }
}
