package dev.tally.server.http;

/** Input refused before any operation ran, with the problem to answer and what to do instead. */
final class BadRequestException extends IllegalArgumentException {
  private static final long serialVersionUID = 1L;
  private final transient Problem problem;

  BadRequestException(Problem problem, String message) {
    super(message);
    this.problem = problem;
  }

  BadRequestException(String message) {
    this(Problem.BAD_REQUEST, message);
  }

  Problem problem() {
    return problem;
  }
}
