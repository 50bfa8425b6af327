package dev.tally.spring.concurrency;

import dev.tally.spring.ConcurrencyLeases;
import dev.tally.spring.ConcurrencyLimited;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Component;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RestController;

/** A servlet application whose exports run at most two at a time per tenant (ConcurrencyAppTest). */
@SpringBootApplication
public class ConcurrencyApp {

  /** Where the test holds exports open: a bean of its own, as the controller is a proxy. */
  @Component
  public static class Gate {
    /** Calls inside {@link Api#export}; each waits for {@link #open}. */
    public final AtomicInteger running = new AtomicInteger();
    public volatile CountDownLatch open = new CountDownLatch(0);
  }

  @RestController
  public static class Api {
    private final Gate gate;

    Api(Gate gate) {
      this.gate = gate;
    }

    @PostMapping("/exports/{tenant}")
    @ConcurrencyLimited(name = "exports", key = "#tenant", maxPermits = 2, leaseTtl = "30s")
    public String export(@PathVariable String tenant) throws InterruptedException {
      gate.running.incrementAndGet();
      try {
        if (!gate.open.await(30, TimeUnit.SECONDS)) {
          throw new IllegalStateException("the test never opened the gate");
        }
        return "token " + ConcurrencyLeases.current().orElseThrow().fencingToken();
      } finally {
        gate.running.decrementAndGet();
      }
    }

    @PostMapping("/failing/{tenant}")
    @ConcurrencyLimited(name = "exports", key = "#tenant", maxPermits = 2, leaseTtl = "30s")
    public String failing(@PathVariable String tenant) {
      throw new IllegalStateException("the export failed");
    }
  }

  @Service
  public static class Jobs {
    /** Holds its permit until the stage it returns completes. */
    @ConcurrencyLimited(name = "jobs", maxPermits = 1, leaseTtl = "30s")
    public CompletableFuture<String> start(CompletableFuture<String> work) {
      return work;
    }

    /** A lease of 300 ms on work that outlasts it: renewed while it runs. */
    @ConcurrencyLimited(name = "long", maxPermits = 1, leaseTtl = "300ms")
    public long longWork(CountDownLatch done) throws InterruptedException {
      done.await(30, TimeUnit.SECONDS);
      return ConcurrencyLeases.current().orElseThrow().fencingToken();
    }
  }
}
