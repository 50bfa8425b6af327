package dev.tally;

/** Thrown by {@link LeakyBucket#add} when the amount does not fit; carries the bucket's state. */
public class BucketFullException extends TallyException {
  private static final long serialVersionUID = 1L;
  private final transient BucketState state;

  /** Creates the exception for {@code bucket} in {@code state}. */
  public BucketFullException(String bucket, long amount, BucketState state) {
    super("leaky bucket '" + bucket + "' is full: " + amount + " does not fit in the "
        + state.remaining() + " remaining of " + state.capacity() + "; it drains fully by "
        + state.reset());
    this.state = state;
  }

  /** The bucket's state when the add was refused. */
  public BucketState state() {
    return state;
  }
}
