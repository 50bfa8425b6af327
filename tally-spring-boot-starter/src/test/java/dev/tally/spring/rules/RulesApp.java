package dev.tally.spring.rules;

import dev.tally.TimeSource;
import dev.tally.spring.RateLimitExceededException;
import dev.tally.spring.RateLimitVerdict;
import dev.tally.spring.RateLimited;
import dev.tally.spring.TallyRateLimits;
import dev.tally.tck.ManualTimeSource;
import java.time.Instant;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

/**
 * A servlet application whose filter rules (application-rules.yml) have conditions, predicates,
 * plans and post-execution costs, on a clock that stands still so that no limit refills during a
 * test.
 */
@SpringBootApplication
public class RulesApp {

  @Bean
  TimeSource clock() {
    return new ManualTimeSource(Instant.parse("2026-03-01T10:00:00Z"));
  }

  @Bean
  Gate gate() {
    return new Gate();
  }

  /** Holds failed logins and model calls inside the handler until the test opens it, so that they overlap. */
  public static final class Gate {
    private volatile CountDownLatch latch = new CountDownLatch(0);

    public void close() {
      latch = new CountDownLatch(1);
    }

    public void open() {
      latch.countDown();
    }

    void pass() throws InterruptedException {
      if (!latch.await(30, TimeUnit.SECONDS)) {
        throw new IllegalStateException("the test never opened the gate");
      }
    }
  }

  @RestController
  static class Api {
    private final TallyRateLimits limits;
    private final Gate gate;

    Api(TallyRateLimits limits, Gate gate) {
      this.limits = limits;
      this.gate = gate;
    }

    /** 200 for the right password, 401 otherwise: only failures count (post-execute-condition). */
    @PostMapping("/login")
    ResponseEntity<String> login(@RequestHeader(name = "X-Password", required = false) String password)
        throws InterruptedException {
      if ("right".equals(password)) {
        return ResponseEntity.ok("welcome");
      }
      gate.pass();
      return ResponseEntity.status(401).body("wrong password");
    }

    /** Costs what the X-Tokens-Used response header says (post-execute-cost). */
    @GetMapping("/tokens")
    ResponseEntity<String> tokens(@RequestParam long used) {
      return ResponseEntity.ok().header("X-Tokens-Used", Long.toString(used)).body("used " + used);
    }

    /**
     * A model call that used {@code used} tokens, known only once it ends (post-execute-cost, on an
     * estimate of permits): it waits at the gate, so that calls overlap.
     */
    @GetMapping("/llm")
    ResponseEntity<String> llm(@RequestParam long used) throws InterruptedException {
      gate.pass();
      return ResponseEntity.ok().header("X-Tokens-Used", Long.toString(used)).body("used " + used);
    }

    /** The model call, answered asynchronously: its cost is known once the request completes. */
    @GetMapping("/llm-async")
    CompletableFuture<ResponseEntity<String>> llmAsync(@RequestParam long used) {
      return CompletableFuture.supplyAsync(
          () -> ResponseEntity.ok().header("X-Tokens-Used", Long.toString(used)).body("used " + used));
    }

    /** Limited by a filter rule and by its own annotation. */
    @GetMapping("/both")
    @RateLimited(name = "both-burst", limits = "token-bucket 1/1d")
    String both() {
      return "both";
    }

    /** Limited unless the caller is internal; a big export also by a second rule. */
    @GetMapping("/exports/{rows}")
    @RateLimited(name = "exports", limits = "token-bucket 2/1d", skipCondition = "header('X-Internal') == 'yes'")
    @RateLimited(name = "big-exports", limits = "token-bucket 1/1d", executeCondition = "#rows > 1000")
    String exports(@PathVariable long rows) {
      return rows + " rows";
    }

    /** Refused once nothing is left, taking nothing: a zero-permit check, thrown. */
    @GetMapping("/peek/{user}")
    String peek(@PathVariable String user) {
      RateLimitVerdict v = limits.check("probe", user, 0);
      if (!v.allowed()) {
        throw new RateLimitExceededException(v);
      }
      return "something left";
    }

    @PostMapping("/spend/{user}")
    String spend(@PathVariable String user) {
      limits.enforce("probe", user, 1);
      return "spent";
    }

    /** Everything the conditions and predicates are tried on. */
    @RequestMapping({"/cond/**", "/pred/**", "/plans"})
    String ok() {
      return "ok";
    }
  }
}
