package dev.tally.redis;

import dev.tally.StoreTimeoutException;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

/**
 * Group confirmation of writes by replicas ({@code ?replicas=n}): Redis' {@code WAIT n ms}, shared
 * by every write whose reply arrived before it was sent.
 *
 * <p>{@code WAIT} answers how many replicas hold everything <em>this client connection</em> wrote
 * so far, so one {@code WAIT} sent after a write's reply confirms that write and every earlier
 * one on the connection. A write that completes while a {@code WAIT} is in flight joins the next
 * group, sent when the current one answers: at most one {@code WAIT} is in flight, and under load
 * each confirms many writes, as a group commit does. (Redis holds the connection's later commands
 * while a {@code WAIT} blocks it, which is why the groups take turns rather than overlap.)
 *
 * <p>One instance per {@link Link}: a {@code WAIT} on another connection, one that wrote nothing,
 * answers at once and would confirm nothing it claims to.
 */
final class ReplicaAcks {
  private final RedisClusterAsyncCommands<String, String> commands;
  private final int replicas;
  private final long waitMillis;

  /** The group the next WAIT confirms; null while nobody waits for one. Guarded by this. */
  private CompletableFuture<Long> next;
  private boolean waiting;

  /**
   * @param within how long Redis waits for the replicas: half the command timeout, so that Redis
   *     answers with its count before the client gives up on the connection
   */
  ReplicaAcks(RedisClusterAsyncCommands<String, String> commands, int replicas, Duration within) {
    this.commands = commands;
    this.replicas = replicas;
    this.waitMillis = Math.max(1, within.toMillis());
  }

  int replicas() {
    return replicas;
  }

  long waitMillis() {
    return waitMillis;
  }

  /**
   * Completes with the number of replicas that hold every write this connection had answered
   * before the call, or fails with the {@code WAIT}'s own failure.
   */
  CompletableFuture<Long> confirm() {
    CompletableFuture<Long> group;
    synchronized (this) {
      if (next == null) {
        next = new CompletableFuture<>();
      }
      group = next;
      if (waiting) {
        return group;
      }
      waiting = true;
      next = null;
    }
    send(group);
    return group;
  }

  /**
   * The failure of a write that the primary applied but fewer than the asked replicas confirmed:
   * it may survive, or be lost in a failover, so the caller must treat it as "maybe applied".
   */
  static StoreTimeoutException unconfirmed(String[] keys, long confirmed, ReplicaAcks acks, String primary) {
    String what = keys.length == 0 ? "the write" : "the write to '" + keys[0] + "'" + (keys.length > 1 ? " and "
        + (keys.length - 1) + " more keys" : "");
    return new StoreTimeoutException(what + " reached the Redis primary " + primary + ", but " + confirmed + " of the "
        + acks.replicas + " replicas asked for (replicas=" + acks.replicas + ") confirmed it within " + acks.waitMillis
        + " ms; it may or may not survive a failover. Retrying under the same operation id applies it at most once", null);
  }

  private void send(CompletableFuture<Long> group) {
    commands.waitForReplication(replicas, waitMillis).whenComplete((count, failure) -> {
      CompletableFuture<Long> following;
      synchronized (this) {
        following = next;
        next = null;
        waiting = following != null;
      }
      if (following != null) {
        send(following); // before completing this group: its writes' callers should not delay the next
      }
      if (failure != null) {
        group.completeExceptionally(failure);
      } else {
        group.complete(count);
      }
    });
  }
}
