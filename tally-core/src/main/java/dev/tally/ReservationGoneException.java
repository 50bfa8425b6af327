package dev.tally;

/**
 * Thrown when a reservation is settled or cancelled after it was closed already: settled (at
 * another amount), cancelled, or expired after its ttl (and so settled at its estimate). Nothing
 * was changed. A settlement repeated with the same amount is not refused: it is a retry, and
 * returns the first settlement's decision.
 */
public class ReservationGoneException extends TallyException {
  private static final long serialVersionUID = 1L;

  private final String reservationId;

  /** Creates the exception for reservation {@code id} on limiter {@code limiter}, saying {@code why}. */
  public ReservationGoneException(String id, String limiter, String why) {
    this(id, limiter, why, null);
  }

  /** As {@link #ReservationGoneException(String, String, String)}, with the underlying cause. */
  public ReservationGoneException(String id, String limiter, String why, Throwable cause) {
    super("reservation '" + id + "' of limiter '" + limiter + "' " + why + "; nothing was changed."
        + " A reservation is closed once (settled, cancelled, or at its estimate when its ttl"
        + " ends): reserve again for new work", cause);
    this.reservationId = id;
  }

  /** The reservation's id. */
  public String reservationId() {
    return reservationId;
  }
}
