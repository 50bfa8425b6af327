package dev.tally.spring.reactive;

import dev.tally.spring.RateLimited;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** A WebFlux application with filter rules (application-reactive.yml) and one annotated method. */
@SpringBootApplication
public class ReactiveApp {

  @RestController
  static class Api {
    @GetMapping("/api/items/{id}")
    Mono<String> item(@PathVariable String id) {
      return Mono.just("item " + id);
    }

    @GetMapping("/api/multi/{user}")
    Mono<String> multi(@PathVariable String user) {
      return Mono.just("multi " + user);
    }

    @PostMapping("/api/posts")
    Mono<String> post() {
      return Mono.just("posted");
    }

    @GetMapping("/api/posts")
    Mono<String> posts() {
      return Mono.just("posts");
    }

    /** 200 for the right password, 401 otherwise: only failures count (charge-on-status). */
    @PostMapping("/login")
    Mono<ResponseEntity<String>> login(@RequestHeader(name = "X-Password", required = false) String password) {
      return Mono.just("right".equals(password) ? ResponseEntity.ok("welcome")
          : ResponseEntity.status(401).body("wrong password"));
    }

    /** Costs what the X-Tokens-Used response header says (post-execute-cost); fails if asked to. */
    @GetMapping("/tokens")
    Mono<ResponseEntity<String>> tokens(@RequestParam long used, @RequestParam(defaultValue = "false") boolean fail) {
      if (fail) {
        return Mono.error(new IllegalStateException("the model call failed"));
      }
      return Mono.just(ResponseEntity.ok().header("X-Tokens-Used", Long.toString(used)).body("used " + used));
    }

    /** Limited twice: by the filter rule "both" and by this annotation. */
    @GetMapping("/api/both/{user}")
    @RateLimited(limits = "token-bucket 2/1d", key = "#user")
    String both(@PathVariable String user) {
      return "both " + user;
    }

    @GetMapping("/greet")
    @RateLimited(limits = "token-bucket 2/1d", key = "#name")
    String greet(@RequestParam String name) {
      return "hi " + name;
    }
  }
}
