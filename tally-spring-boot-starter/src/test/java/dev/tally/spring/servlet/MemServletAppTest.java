package dev.tally.spring.servlet;

import org.springframework.test.context.TestPropertySource;

/** The servlet application on the memory store. */
@TestPropertySource(properties = "tally.store=mem:")
class MemServletAppTest extends AbstractServletAppTest {
  @Override
  String scheme() {
    return "mem";
  }
}
