package dev.tally.local;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/** A {@link Worker} in its own JVM, with its stdout collected line by line. */
final class Child implements AutoCloseable {
  final Process process;
  final List<String> lines = new CopyOnWriteArrayList<>();

  private Child(Process process) {
    this.process = process;
    Thread reader = new Thread(() -> {
      try (BufferedReader r = new BufferedReader(
          new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
        for (String line; (line = r.readLine()) != null; ) {
          lines.add(line);
        }
      } catch (IOException e) {
        // the child was killed
      }
    }, "child-" + process.pid() + "-stdout");
    reader.setDaemon(true);
    reader.start();
  }

  /** Starts {@code Worker args...} with this JVM's java and class path, tuned to start fast. */
  static Child start(String... args) {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"),
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx64m", "-Xshare:auto",
        Worker.class.getName()));
    cmd.addAll(List.of(args));
    try {
      return new Child(new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Waits for a line starting with {@code prefix}; fails if the child exits first or time runs out. */
  String await(String prefix, long millis) throws InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
    while (System.nanoTime() < deadline) {
      for (String l : lines) {
        if (l.startsWith(prefix)) {
          return l;
        }
      }
      if (!process.isAlive()) {
        Thread.sleep(50); // let the reader drain
        for (String l : lines) {
          if (l.startsWith(prefix)) {
            return l;
          }
        }
        throw new AssertionError("child " + process.pid() + " exited (" + process.exitValue()
            + ") without printing " + prefix + "; it printed " + lines);
      }
      Thread.sleep(5);
    }
    throw new AssertionError("child " + process.pid() + " did not print " + prefix + " within "
        + millis + " ms; it printed " + lines);
  }

  List<String> linesStartingWith(String prefix) {
    return lines.stream().filter(l -> l.startsWith(prefix)).toList();
  }

  /** kill -9 (Process.destroyForcibly sends SIGKILL on Linux), and wait for the end. */
  void kill() throws InterruptedException {
    process.destroyForcibly();
    if (!process.waitFor(10, TimeUnit.SECONDS)) {
      throw new AssertionError("child " + process.pid() + " survived SIGKILL");
    }
  }

  @Override
  public void close() {
    if (process.isAlive()) {
      try {
        kill();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }
}
