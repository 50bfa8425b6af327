package dev.tally.server;

import dev.tally.server.http.Problem;
import java.io.PrintWriter;
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
    System.exit(run(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
  }

  /** Runs the command line with these streams and returns the exit code. */
  public static int run(String[] args, PrintWriter out, PrintWriter err) {
    CommandLine cli = commandLine();
    cli.setOut(out);
    cli.setErr(err);
    return cli.execute(args);
  }

  static CommandLine commandLine() {
    CommandLine cli = new CommandLine(new TallyCommand());
    cli.setParameterExceptionHandler(Main::badUsage);
    cli.setExecutionExceptionHandler((e, commandLine, parseResult) -> {
      Problem problem = Problem.of(e);
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
    PrintWriter err = cl.getErr();
    String message = e.getMessage();
    if (e instanceof UnmatchedArgumentException u && !u.getUnmatched().isEmpty()) {
      String arg = u.getUnmatched().get(0);
      boolean command = !cl.getSubcommands().isEmpty() && !arg.startsWith("-");
      message = "unknown " + (arg.startsWith("-") ? "option" : command ? "command" : "argument")
          + " '" + arg + "'" + (u.getSuggestions().isEmpty() ? ""
              : "; did you mean '" + u.getSuggestions().get(0) + "'?");
    }
    err.println(prefix(cl) + lowerFirst(message) + " (see '" + cl.getCommandSpec().qualifiedName()
        + " --help')");
    err.flush();
    return Problem.BAD_REQUEST.exitCode();
  }

  private static String prefix(CommandLine cl) {
    return cl.getCommandSpec().qualifiedName() + ": ";
  }

  private static String lowerFirst(String s) {
    return s == null || s.isEmpty() ? "bad usage" : Character.toLowerCase(s.charAt(0)) + s.substring(1);
  }

  /** The version from the jar's manifest. */
  static final class Version implements IVersionProvider {
    @Override
    public String[] getVersion() {
      String v = Main.class.getPackage().getImplementationVersion();
      return new String[] {"tally " + (v == null ? "(development build)" : v)
          + " on Java " + System.getProperty("java.version")};
    }
  }
}
