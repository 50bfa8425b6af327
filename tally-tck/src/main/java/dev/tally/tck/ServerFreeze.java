package dev.tally.tck;

/**
 * Freezes the server behind a networked store and thaws it, for {@link ServerFaultContract}: what
 * a hung host, a long stall or a partition looks like to a client. A harness sends
 * {@code SIGSTOP} to every process of the server (for PostgreSQL the postmaster and each
 * backend) and {@code SIGCONT} to resume: the sockets stay open and nothing answers.
 */
public interface ServerFreeze {
  /** Stops the server; it accepts connections (the kernel does) but answers nothing. */
  void freeze();

  /** Lets the server run again. */
  void resume();
}
