package dev.tally.server;

import java.io.ByteArrayInputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line run in this JVM ({@link Main#run}) against one file store, with a given
 * stdin: fast enough for the many small cases of a command's input. The launcher and the real
 * process are {@link CliIT}'s.
 */
final class InProcess {
  record Run(int exit, String out, String err) {}

  private final String store;

  /** A fresh file store in {@code dir}, shared by every run of this instance. */
  InProcess(Path dir) {
    this.store = "file:" + dir.resolve("data");
  }

  Run run(String... args) {
    return withStdin("", args);
  }

  Run withStdin(String stdin, String... args) {
    return withStdin(stdin.getBytes(StandardCharsets.UTF_8), args);
  }

  Run withStdin(byte[] stdin, String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    List<String> all = new ArrayList<>(List.of("--store", store));
    all.addAll(List.of(args));
    int exit = Main.run(all.toArray(String[]::new), new ByteArrayInputStream(stdin),
        new PrintWriter(out, true), new PrintWriter(err, true));
    return new Run(exit, out.toString(), err.toString());
  }

  /** Every live key, one per line: what a case left in the store. */
  String keys() {
    return run("keys").out();
  }
}
