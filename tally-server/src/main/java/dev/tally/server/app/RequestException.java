package dev.tally.server.app;

/** A request refused before any operation ran: the problem to answer and what to do instead. */
public final class RequestException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final transient Problem problem;

  public RequestException(Problem problem, String message) {
    super(message);
    this.problem = problem;
  }

  public RequestException(String message) {
    this(Problem.BAD_REQUEST, message);
  }

  public Problem problem() {
    return problem;
  }
}
