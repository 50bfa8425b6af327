package dev.tally.tck;

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

/**
 * A class's {@code main} in a JVM of its own, on this JVM's java and class path, with its stdout
 * collected line by line: the child processes of the multi-process tests (a store's clients that
 * share nothing but the store). Its stderr goes to this JVM's.
 */
public final class ChildJvm implements AutoCloseable {
  private final Process process;
  private final List<String> lines = new CopyOnWriteArrayList<>();

  private ChildJvm(Process process) {
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

  /**
   * Starts {@code main args...}, tuned to start fast (C1 only, a small serial heap): the children
   * live seconds, and several start at once on a shared machine.
   */
  public static ChildJvm start(Class<?> main, String... args) {
    List<String> cmd = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", System.getProperty("java.class.path"),
        "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx64m", "-Xshare:auto",
        main.getName()));
    cmd.addAll(List.of(args));
    try {
      return new ChildJvm(new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT).start());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** The child's process. */
  public Process process() {
    return process;
  }

  /** Waits for a line starting with {@code prefix}; fails if the child exits first or time runs out. */
  public String await(String prefix, long millis) throws InterruptedException {
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

  /** The lines printed so far that start with {@code prefix}. */
  public List<String> linesStartingWith(String prefix) {
    return lines.stream().filter(l -> l.startsWith(prefix)).toList();
  }

  /** kill -9 (Process.destroyForcibly sends SIGKILL on Linux), and wait for the end. */
  public void kill() throws InterruptedException {
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
