package dev.tally.spring.servlet;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The servlet application on the file store, in a temporary directory. */
class FileServletAppTest extends AbstractServletAppTest {
  @DynamicPropertySource
  static void store(DynamicPropertyRegistry registry) {
    try {
      String dir = Files.createTempDirectory("tally-spring-file").resolve("data").toString();
      registry.add("tally.store", () -> "file:" + dir);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  @Override
  String scheme() {
    return "file";
  }
}
