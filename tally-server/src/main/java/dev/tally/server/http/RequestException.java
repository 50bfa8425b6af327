package dev.tally.server.http;

/** A request refused before any operation ran: the problem to answer and what to do instead. */
final class RequestException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final transient Problem problem;

  RequestException(Problem problem, String message) {
    super(message);
    this.problem = problem;
  }

  RequestException(String message) {
    this(Problem.BAD_REQUEST, message);
  }

  Problem problem() {
    return problem;
  }
}
