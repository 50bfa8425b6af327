package dev.tally.jdbc;

import dev.tally.Tally;
import java.io.PrintStream;
import java.util.List;

/**
 * A flusher in a process of its own, for {@link FlushCrashTest} to kill: runs {@link Flush} over
 * and over and prints each step as it begins ({@code STEP recorded}, {@code STEP popped},
 * {@code STEP applying}, {@code STEP applied}). After printing the step named in its arguments it
 * pauses, so that the test's {@code kill -9} lands inside that step.
 *
 * <p>Arguments: source URI, prefix, target URI, statement, ledger, step to pause at (or "none").
 */
public final class FlushChild {
  private FlushChild() {}

  public static void main(String[] args) throws InterruptedException {
    String source = args[0];
    String prefix = args[1];
    String target = args[2];
    String sql = args[3];
    String ledger = args[4];
    String pauseAt = args[5];
    PrintStream out = System.out;
    Flush.Listener listener = new Flush.Listener() {
      private void step(String name) {
        out.println("STEP " + name);
        out.flush();
        if (name.equals(pauseAt)) {
          try {
            Thread.sleep(2_000); // the test kills us meanwhile
          } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
          }
        }
      }

      @Override
      public void recorded(String batch, List<String> keys) {
        step("recorded");
      }

      @Override
      public void popped(String batch, String key, long count) {
        step("popped");
      }

      @Override
      public void applying(String batch) {
        step("applying");
      }

      @Override
      public void applied(String batch, long total) {
        step("applied");
      }
    };
    try (Tally tally = Tally.open(source)) {
      Flush flush = Flush.from(tally, prefix).into(target, sql).ledger(ledger).batchSize(3).listener(listener).build();
      out.println("READY");
      out.flush();
      for (;;) {
        try {
          flush.run();
        } catch (FlushBusyException e) {
          Thread.sleep(20); // the flusher killed before us still holds the lock, until the server notices
        }
      }
    }
  }
}
