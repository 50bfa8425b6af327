package dev.tally.local;

import dev.tally.tck.JointDecisionProcessesContract;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;

/** Joint decisions from three JVMs on one {@code file:} store: the ordered slot locks between processes. */
class FileJointProcessesTest extends JointDecisionProcessesContract {
  @TempDir
  Path data;

  @Override
  protected String uri() {
    return "file:" + data;
  }
}
