package dev.tally.spring.servlet;

import dev.tally.tck.RedisServerProcess;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The servlet application on a real Redis that the test starts. */
class RedisServletAppTest extends AbstractServletAppTest {
  static final RedisServerProcess REDIS = RedisServerProcess.start();

  @DynamicPropertySource
  static void store(DynamicPropertyRegistry registry) {
    registry.add("tally.store", REDIS::uri);
  }

  @Override
  String scheme() {
    return "redis";
  }
}
