package dev.tally.redis;

import dev.tally.tck.ConcurrencyProcessesContract;

/**
 * A concurrency limit shared by three JVMs on the shared standalone server: every step one
 * script, leases expiring on the server's clock.
 */
class RedisConcurrencyProcessesTest extends ConcurrencyProcessesContract {
  @Override
  protected String uri() {
    return SharedServers.standalone().uri();
  }
}
