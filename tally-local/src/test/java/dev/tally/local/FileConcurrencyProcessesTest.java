package dev.tally.local;

import dev.tally.tck.ConcurrencyProcessesContract;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** A concurrency limit shared by three JVMs on one {@code file:} store: the slot lock between processes. */
class FileConcurrencyProcessesTest extends ConcurrencyProcessesContract {
  @TempDir
  Path data;

  @Override
  protected String uri() {
    return "file:" + data;
  }
}
