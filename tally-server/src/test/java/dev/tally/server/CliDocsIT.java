package dev.tally.server;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The examples of docs/cli.md and README.md, run exactly as written. In a fenced block, a line
 * {@code $ COMMAND} is a shell command (a trailing {@code \} continues it on the next line) and
 * the lines after it, up to the next {@code $} line or the end of the block, are what it prints,
 * stdout and stderr together. The blocks of a page run in order, in one empty directory, against
 * the default store there: as a reader who starts from nothing and follows the page would.
 *
 * <p>An HTML comment just before a block, invisible on the rendered page, may say:
 * <ul>
 *   <li>{@code <!-- docs-test: skip: WHY -->}: not run (it needs a server, a database, a key
 *       press, or prints measurements);
 *   <li>{@code <!-- docs-test: durations vary -->}: a duration printed as a value of its own
 *       ({@code reset-after=13h2m5s}, or a line {@code 30m}) depends on the clock and matches any
 *       duration; everything else still matches exactly;
 *   <li>{@code <!-- docs-test: setup `COMMAND` WHY -->}: run COMMAND first, unchecked (what an
 *       earlier step of the page does some other way, e.g. through the server).
 * </ul>
 * Those are the only allowances.
 */
class CliDocsIT {
  static final Path ROOT = CliIT.LAUNCHER.getParent();
  private static final Pattern ANNOTATION = Pattern.compile("<!-- docs-test: (.*) -->");
  private static final Pattern SETUP = Pattern.compile("setup `([^`]+)`.*");
  /** A duration standing alone: after '=' or at the start of a line, up to a space or the end. */
  private static final Pattern DURATION =
      Pattern.compile("(?<=^|=)(?:\\d+(?:\\.\\d+)?(?:ns|us|ms|s|m|h|d|w))+(?=\\s|$)",
          Pattern.MULTILINE);

  record Example(int line, String command, String expected) {}

  record Block(int line, String annotation, List<Example> examples) {}

  @Test
  void everyExampleOfTheCommandLinePagePrintsWhatItShows(@TempDir Path dir) throws Exception {
    List<Block> blocks = blocks(ROOT.resolve("docs/cli.md"));
    assertThat(blocks.stream().mapToLong(b -> b.examples().size()).sum())
        .as("examples found in docs/cli.md").isGreaterThan(40);
    assertThat(run(blocks, dir, "docs/cli.md")).isEmpty();
  }

  @Test
  void everyCommandLineExampleOfTheReadmePrintsWhatItShows(@TempDir Path dir) throws Exception {
    List<Block> blocks = blocks(ROOT.resolve("README.md"));
    assertThat(blocks.stream().mapToLong(b -> b.examples().size()).sum())
        .as("examples found in README.md").isGreaterThan(5);
    assertThat(run(blocks, dir, "README.md")).isEmpty();
  }

  @Test
  void varyingDurationsAreTheOnlyThingsMasked() {
    assertThat(mask("allowed remaining=1 limit=2 reset-after=13h2m5s\n30m\nlimit=100 x 5s"))
        .isEqualTo("allowed remaining=1 limit=2 reset-after=<duration>\n<duration>\nlimit=100 x 5s");
  }

  /** The fenced blocks holding {@code $} lines, with the annotation before each. */
  static List<Block> blocks(Path page) throws Exception {
    List<String> lines = Files.readAllLines(page);
    List<Block> blocks = new ArrayList<>();
    String annotation = null;
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      Matcher a = ANNOTATION.matcher(line.strip());
      if (a.matches()) {
        annotation = a.group(1);
        continue;
      }
      if (!line.startsWith("```")) {
        if (!line.isBlank()) {
          annotation = null; // an annotation belongs to the block right after it
        }
        continue;
      }
      int start = i + 1;
      List<Example> examples = new ArrayList<>();
      String command = null;
      int commandLine = 0;
      StringBuilder expected = new StringBuilder();
      for (i = start; i < lines.size() && !lines.get(i).startsWith("```"); i++) {
        String l = lines.get(i);
        if (l.startsWith("$ ")) {
          if (command != null) {
            examples.add(new Example(commandLine, command, expected.toString()));
          }
          commandLine = i + 1;
          StringBuilder c = new StringBuilder(l.substring(2));
          while (c.toString().endsWith("\\") && i + 1 < lines.size()) {
            c.append('\n').append(lines.get(++i));
          }
          command = c.toString();
          expected.setLength(0);
        } else if (command != null) {
          expected.append(l).append('\n');
        }
      }
      if (command != null) {
        examples.add(new Example(commandLine, command, expected.toString()));
      }
      if (!examples.isEmpty()) {
        blocks.add(new Block(start, annotation, examples));
      }
      annotation = null;
    }
    return blocks;
  }

  /** Runs the blocks in order in {@code dir}; returns a description of each mismatch. */
  private static List<String> run(List<Block> blocks, Path dir, String page) throws Exception {
    Path bin = Files.createDirectories(dir.resolve(".bin"));
    Path work = Files.createDirectories(dir.resolve("work"));
    // Wrappers, not links: the launcher finds the jar from its own path.
    for (Path wrapper : List.of(bin.resolve("tally"), work.resolve("tally"))) {
      Files.writeString(wrapper, "#!/bin/sh\nexec '" + CliIT.LAUNCHER + "' \"$@\"\n");
      Files.setPosixFilePermissions(wrapper, PosixFilePermissions.fromString("rwxr-xr-x"));
    }
    List<String> mismatches = new ArrayList<>();
    for (Block block : blocks) {
      String a = block.annotation() == null ? "" : block.annotation();
      if (a.startsWith("skip:")) {
        continue;
      }
      if (!a.isEmpty() && !a.equals("durations vary") && !SETUP.matcher(a).matches()) {
        mismatches.add(page + ":" + block.line() + ": unknown annotation '" + a + "'");
        continue;
      }
      Matcher setup = SETUP.matcher(a);
      if (setup.matches()) {
        shell(setup.group(1), work, bin);
      }
      for (Example e : block.examples()) {
        String out = shell(e.command(), work, bin);
        String expected = e.expected();
        if (a.equals("durations vary")) {
          out = mask(out);
          expected = mask(expected);
        }
        if (!out.equals(expected)) {
          mismatches.add(page + ":" + e.line() + ": $ " + e.command() + "\n--- shown:\n" + expected
              + "--- printed:\n" + out);
        }
      }
    }
    return mismatches;
  }

  static String mask(String text) {
    return DURATION.matcher(text).replaceAll("<duration>");
  }

  /** Runs {@code command} with bash in {@code dir}; returns stdout and stderr as interleaved. */
  private static String shell(String command, Path dir, Path bin) throws Exception {
    Path out = Files.createTempFile("tally-docs", ".out");
    try {
      ProcessBuilder pb = new ProcessBuilder("bash", "-c", command).directory(dir.toFile());
      pb.environment().remove("TALLY_STORE");
      pb.environment().remove("TALLY_TOKEN");
      pb.environment().remove("TALLY_JAVA_OPTS");
      pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
      // One file for both streams, as a terminal shows them: in the order they were written.
      Process p = pb.redirectErrorStream(true).redirectOutput(out.toFile())
          .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
      assertThat(p.waitFor(120, TimeUnit.SECONDS)).as(command).isTrue();
      return Files.readString(out);
    } finally {
      Files.deleteIfExists(out);
    }
  }
}
