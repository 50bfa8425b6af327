package dev.tally.server;

import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code tally completion > tally_completion; source tally_completion}. */
@Command(name = "completion", mixinStandardHelpOptions = true,
    description = {
        "Print a bash completion script for tally.",
        "Use: tally completion > tally_completion && source tally_completion"})
final class CompletionCommand implements Runnable {
  @Spec
  CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().getOut().print(AutoComplete.bash("tally", spec.root().commandLine()));
    spec.commandLine().getOut().flush();
  }
}
