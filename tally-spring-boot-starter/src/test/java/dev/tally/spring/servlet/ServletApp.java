package dev.tally.spring.servlet;

import dev.tally.spring.RateLimited;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/** A servlet application with filter rules (application-servlet.yml) and annotated methods. */
@SpringBootApplication
public class ServletApp {

  @RestController
  static class Api {
    private final Reports reports;

    Api(Reports reports) {
      this.reports = reports;
    }

    /** Limited by the filter: tally.filter.rules, by path variable. */
    @GetMapping("/api/items/{id}")
    String item(@PathVariable String id) {
      return "item " + id;
    }

    /** Limited by the filter with two policies at once. */
    @GetMapping("/api/multi/{user}")
    String multi(@PathVariable String user) {
      return "multi " + user;
    }

    /** Limited by the filter for POST only, keyed by a header. */
    @PostMapping("/api/posts")
    String post() {
      return "posted";
    }

    @GetMapping("/api/posts")
    String posts() {
      return "posts";
    }

    /** A named rule, keyed by a header. */
    @GetMapping("/hello")
    @RateLimited(value = "hello", key = "header('X-User')")
    String hello() {
      return "hello";
    }

    /** Two rules: a named one by path variable, an inline one by the client's address. */
    @GetMapping("/orders/{id}")
    @RateLimited(value = "per-order", key = "#id")
    @RateLimited(name = "orders-burst", limits = "burst=token-bucket 3/1d", key = "remoteAddress + ':' + #id")
    String order(@PathVariable String id) {
      return "order " + id;
    }

    /** Four units a call from an allowance of ten. */
    @PostMapping("/exports/{user}")
    @RateLimited(limits = "quota 10/day", key = "pathVariable('user')", permits = 4)
    String export(@PathVariable String user) {
      return "exported";
    }

    /** A service method limited by its argument, called through a controller. */
    @GetMapping("/reports/{customer}")
    String report(@PathVariable String customer) {
      return reports.report(customer);
    }
  }

  @Service
  public static class Reports {
    @RateLimited(limits = "token-bucket 2/1d", key = "#customer")
    public String report(String customer) {
      return "report for " + customer;
    }
  }
}
