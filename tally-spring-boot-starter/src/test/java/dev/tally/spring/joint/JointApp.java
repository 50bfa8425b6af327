package dev.tally.spring.joint;

import dev.tally.TimeSource;
import dev.tally.tck.ManualTimeSource;
import java.time.Instant;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * A servlet application whose filter limits each request by its tenant and its user, decided
 * jointly (JointAppTest's properties), on a clock that stands still so that no limit refills.
 */
@SpringBootApplication
public class JointApp {

  @Bean
  TimeSource clock() {
    return new ManualTimeSource(Instant.parse("2026-03-01T10:00:00Z"));
  }

  @RestController
  static class Api {
    @GetMapping("/api/orders")
    String orders() {
      return "orders";
    }
  }
}
