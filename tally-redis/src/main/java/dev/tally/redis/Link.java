package dev.tally.redis;

import io.lettuce.core.api.StatefulConnection;
import io.lettuce.core.cluster.api.async.RedisClusterAsyncCommands;

/**
 * One Lettuce connection with what a call needs of it: the commands, the address of the server
 * it reaches (the primary, through Sentinel) and, with {@code ?replicas=n}, the replica
 * confirmations that belong to it. A call takes the current link once and sends every command
 * of its own, and the {@code WAIT} confirming them, on that one.
 */
final class Link {
  final StatefulConnection<String, String> connection;
  final RedisClusterAsyncCommands<String, String> commands;
  /** host:port of the server, or the seeds of a Cluster; for messages and the failover checks. */
  final String address;
  /** Null unless writes must reach replicas before they are acknowledged. */
  final ReplicaAcks acks;

  Link(StatefulConnection<String, String> connection, RedisClusterAsyncCommands<String, String> commands,
      String address, ReplicaAcks acks) {
    this.connection = connection;
    this.commands = commands;
    this.address = address;
    this.acks = acks;
  }

  @Override
  public String toString() {
    return address;
  }
}
