package com.example.tally;

import dev.tally.Counters;
import dev.tally.spring.RateLimited;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/**
 * Tally in a Spring Boot application: the filter limits /api/** by API key (application.yml),
 * the annotation limits one endpoint by path variable, and the injected counters count views.
 */
@SpringBootApplication
public class ExampleApplication {

  public static void main(String[] args) {
    SpringApplication.run(ExampleApplication.class, args);
  }

  @RestController
  static class Api {
    private final Counters counters;

    Api(Counters counters) {
      this.counters = counters;
    }

    /** Limited by the filter rule of application.yml: 5 a minute per X-Api-Key. */
    @GetMapping("/api/hello")
    String hello() {
      return "hello\n";
    }

    /** Counted by Tally; limited by the annotation: 3 views an hour per article and client. */
    @PostMapping("/articles/{id}/views")
    @RateLimited(value = "views", key = "#id + ':' + remoteAddress")
    String view(@PathVariable String id) {
      return "views of " + id + ": " + counters.incr("views:" + id) + "\n";
    }
  }
}
