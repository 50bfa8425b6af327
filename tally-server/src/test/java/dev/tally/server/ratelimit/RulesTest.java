package dev.tally.server.ratelimit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Reading rules files, matching descriptors against them, and reloading them. */
class RulesTest {
  static final String MESSAGING = """
      domain: messaging
      descriptors:
        - key: message_type
          value: marketing
          descriptors:
            - key: to_number
              rate_limit:
                unit: day
                requests_per_unit: 5
        - key: to_number
          rate_limit:
            unit: day
            requests_per_unit: 100
        - key: remote_address
          rate_limit: {unit: second, requests_per_unit: 10}
        - key: remote_address
          value: 50.0.0.5
          rate_limit: {unit: second, requests_per_unit: 0}
        - key: path
          value: /api/*
          rate_limit: {unit: minute, requests_per_unit: 60}
        - key: ldap
          rate_limit:
            unlimited: true
      """;

  static RuleSet rules(String yaml) throws RulesException {
    return Rules.of("test.yaml", yaml).current();
  }

  static Rule match(RuleSet rules, String... kv) {
    Entry[] entries = new Entry[kv.length / 2];
    for (int i = 0; i < entries.length; i++) {
      entries[i] = new Entry(kv[2 * i], kv[2 * i + 1]);
    }
    return rules.match("messaging", List.of(entries));
  }

  /**
   * What envoyproxy/ratelimit's own files hold loads: weeks, keys with nothing after them, the
   * keys it reads for metrics, metadata and quotas, and wildcards anywhere in a value.
   */
  @Test
  void everyKeyEnvoysRateLimitReadsIsAccepted() throws Exception {
    RuleSet r = rules("""
        domain: messaging
        metadata: {team: edge}
        descriptors:
          - key: empty
            descriptors:
          - key: nothing
            rate_limit:
          - key: weekly
            detailed_metric: true
            value_to_metric: true
            metadata: {owner: billing}
            rate_limit: {unit: week, requests_per_unit: 7}
          - key: host
            value: "*.example.com"
            rate_limit: {unit: minute, requests_per_unit: 1}
          - key: path
            value: /api/*/items
            rate_limit: {unit: minute, requests_per_unit: 2}
          - key: files
            value: files/*
            share_threshold: true
            rate_limit: {unit: hour, requests_per_unit: 10}
          - key: plan
            quota_mode: true
            rate_limit: {unit: day, requests_per_unit: 3}
        """);
    assertThat(match(r, "empty", "x")).isNull();
    assertThat(match(r, "nothing", "x")).isNull();
    Rule weekly = match(r, "weekly", "x");
    assertThat(weekly.unit()).isEqualTo(Unit.WEEK);
    assertThat(weekly.unit().window()).isEqualTo(java.time.Duration.ofDays(7));
    assertThat(Unit.ofNumber(7)).isEqualTo(Unit.WEEK);
    assertThat(match(r, "host", "api.example.com").requestsPerUnit()).isEqualTo(1);
    assertThat(match(r, "host", "example.org")).isNull();
    assertThat(match(r, "path", "/api/v1/items").requestsPerUnit()).isEqualTo(2);
    assertThat(match(r, "path", "/api/items")).isNull();
    assertThat(match(r, "path", "/api/v1/items/9")).isNull();
    assertThat(match(r, "plan", "pro").quotaMode()).isTrue();
    assertThat(match(r, "weekly", "x").quotaMode()).isFalse();
    // a shared wildcard counts every value it matches under its pattern; another keeps each value
    assertThat(r.countedAs("messaging", List.of(new Entry("files", "files/a.txt"))))
        .containsExactly(new Entry("files", "files/*"));
    assertThat(r.countedAs("messaging", List.of(new Entry("path", "/api/v1/items"))))
        .containsExactly(new Entry("path", "/api/v1/items"));
  }

  @Test
  void aNestedDescriptorMatchesOnlyAtItsOwnDepth() throws Exception {
    RuleSet r = rules(MESSAGING);
    Rule marketing = match(r, "message_type", "marketing", "to_number", "2061111111");
    assertThat(marketing.requestsPerUnit()).isEqualTo(5);
    assertThat(marketing.unit()).isEqualTo(Unit.DAY);
    assertThat(marketing.path()).isEqualTo("message_type=marketing.to_number");
    assertThat(marketing.source()).isEqualTo("test.yaml:7");
    // the parent alone has no limit; a deeper request than the rules has none either
    assertThat(match(r, "message_type", "marketing")).isNull();
    assertThat(match(r, "to_number", "1", "extra", "x")).isNull();
    assertThat(match(r, "message_type", "other", "to_number", "1")).isNull();
  }

  @Test
  void aKeyWithItsValueWinsOverTheKeyAloneAndAWildcardOverBoth() throws Exception {
    RuleSet r = rules(MESSAGING);
    assertThat(match(r, "remote_address", "10.0.0.1").requestsPerUnit()).isEqualTo(10);
    assertThat(match(r, "remote_address", "50.0.0.5").requestsPerUnit()).isZero();
    assertThat(match(r, "path", "/api/users").requestsPerUnit()).isEqualTo(60);
    assertThat(match(r, "path", "/other")).isNull();
    assertThat(match(r, "ldap", "anyone").unlimited()).isTrue();
    assertThat(match(r, "unknown", "x")).isNull();
    assertThat(r.match("no-such-domain", List.of(new Entry("to_number", "1")))).isNull();
  }

  @Test
  void readsNameReplacesAndShadowMode() throws Exception {
    RuleSet r = rules("""
        domain: messaging
        descriptors:
          - key: user
            shadow_mode: true
            detailed_metric: true
            rate_limit:
              name: specific
              replaces: [{name: general}]
              unit: SECOND
              requests_per_unit: 4294967295
        """);
    Rule u = match(r, "user", "x");
    assertThat(u.shadowMode()).isTrue();
    assertThat(u.name()).isEqualTo("specific");
    assertThat(u.replaces()).containsExactly("general");
    assertThat(u.requestsPerUnit()).isEqualTo(4_294_967_295L);
  }

  static void refused(String yaml, String message) {
    assertThatThrownBy(() -> rules(yaml)).isInstanceOf(RulesException.class)
        .hasMessage(message);
  }

  @Test
  void badFilesAreRefusedNamingTheLineAndWhatIsWrong() {
    refused("", "test.yaml:1: the file is empty; a rules file holds 'domain: NAME' and"
        + " 'descriptors:' (see docs/envoy.md)");
    refused("descriptors: []\n", "test.yaml:1: no 'domain'; every rules file names its domain,"
        + " e.g. 'domain: envoy'");
    refused("domain: d\ndescriptors:\n  - key: a\n    rate_limt: {unit: day}\n",
        "test.yaml:4: unknown key 'rate_limt' in a descriptor; expected descriptors,"
            + " detailed_metric, key, metadata, quota_mode, rate_limit, shadow_mode, share_threshold, value,"
            + " value_to_metric");
    refused("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight,"
        + " requests_per_unit: 1}\n",
        "test.yaml:4: unit 'fortnight' is not one of second, minute, hour, day, week, month, year");
    refused("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: day\n",
        "test.yaml:4: rate_limit of a has no 'requests_per_unit'; give the number of requests"
            + " allowed per day (0 refuses every request)");
    refused("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: day\n"
            + "      requests_per_unit: -1\n",
        "test.yaml:6: requests_per_unit must be a whole number from 0 to 4294967295, not -1");
    refused("domain: d\ndescriptors:\n  - key: a\n    rate_limit:\n      unit: day\n"
            + "      requests_per_unit: '10'\n",
        "test.yaml:6: requests_per_unit must be a whole number from 0 to 4294967295, not '10'"
            + " (a string)");
    refused("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, unit: day}\n",
        "test.yaml:4: a rate_limit with 'unlimited: true' takes neither 'unit' nor"
            + " 'requests_per_unit'; remove them, or remove 'unlimited'");
    refused("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unlimited: true, charge_hits: true}\n",
        "test.yaml:4: an unlimited rate_limit has nothing to charge: remove 'charge_hits'");
    refused("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: day, requests_per_unit: 0,"
            + " charge_hits: true}\n",
        "test.yaml:4: a rate_limit of 0 refuses every request and takes no debt: remove 'charge_hits',"
            + " or give it a limit");
    refused("domain: d\ndescriptors:\n  - key: a\n    charge_hits: true\n",
        "test.yaml:4: unknown key 'charge_hits' in a descriptor; expected descriptors, detailed_metric, key,"
            + " metadata, quota_mode, rate_limit, shadow_mode, share_threshold, value, value_to_metric");
    refused("domain: d\ndescriptors:\n  - key: a\n    value: x\n  - key: a\n    value: x\n",
        "test.yaml:5: descriptor a=x is defined twice at this level (first on line 3); merge the"
            + " two");
    refused("domain: d\ndomain: e\n", "test.yaml:2: 'domain' appears twice in one mapping (first"
        + " on line 1)");
    refused("domain: d\ndescriptors:\n  - value: x\n", "test.yaml:3: a descriptor without 'key';"
        + " every descriptor has one, e.g. 'key: remote_address'");
    refused("domain: d\ndescriptors:\n  - key: a\n    shadow_mode: yes please\n",
        "test.yaml:4: 'shadow_mode' must be true or false, not 'yes please' (a string)");
    assertThatThrownBy(() -> rules("domain: d\ndescriptors: [\n"))
        .isInstanceOf(RulesException.class).hasMessageStartingWith("test.yaml:")
        .hasMessageContaining("not valid YAML");
  }

  @Test
  void aDomainDefinedInTwoFilesIsRefused(@TempDir Path dir) throws Exception {
    Files.writeString(dir.resolve("a.yaml"), "domain: edge\n");
    Files.writeString(dir.resolve("b.yaml"), "domain: edge\n");
    assertThatThrownBy(() -> Rules.load(List.of(dir))).isInstanceOf(RulesException.class)
        .hasMessage(dir.resolve("b.yaml") + ": domain 'edge' is already defined in "
            + dir.resolve("a.yaml") + "; keep each domain in one file");
  }

  @Test
  void aChangedFileIsReloadedAndABadOneRefusedKeepingTheRulesInForce(@TempDir Path dir)
      throws Exception {
    Path file = dir.resolve("edge.yaml");
    Files.writeString(dir.resolve(".hidden.yaml"), "not: rules"); // dot-files are skipped
    Files.writeString(dir.resolve("notes.txt"), "not rules either");
    Files.writeString(file, "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit:"
        + " minute, requests_per_unit: 10}\n");
    try (Rules rules = Rules.load(List.of(dir))) {
      RuleSet first = rules.current();
      assertThat(rules.reload()).isEqualTo(Rules.Outcome.UNCHANGED);
      assertThat(rules.current()).isSameAs(first);

      Files.writeString(file, "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit:"
          + " minute, requests_per_unit: 20}\n");
      assertThat(rules.reload()).isEqualTo(Rules.Outcome.APPLIED);
      assertThat(rules.current().match("edge", List.of(new Entry("ip", "1"))).requestsPerUnit())
          .isEqualTo(20);

      RuleSet good = rules.current();
      Files.writeString(file, "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit:"
          + " minute}\n");
      assertThat(rules.reload()).isEqualTo(Rules.Outcome.REFUSED);
      assertThat(rules.reload()).isEqualTo(Rules.Outcome.REFUSED); // logged once, still refused
      assertThat(rules.current()).isSameAs(good);
      Rules.Status s = rules.status();
      assertThat(s.lastError()).isEqualTo(file + ":4: rate_limit of ip has no"
          + " 'requests_per_unit'; give the number of requests allowed per minute (0 refuses"
          + " every request)");
      assertThat(s.applied()).isEqualTo(1);
      assertThat(s.refused()).isEqualTo(1);

      Files.writeString(dir.resolve("api.yaml"), "domain: api\n");
      Files.writeString(file, "domain: edge\n");
      assertThat(rules.reload()).isEqualTo(Rules.Outcome.APPLIED);
      assertThat(rules.current().domains()).containsExactly("api", "edge");
      assertThat(rules.status().lastError()).isNull();

      Files.delete(dir.resolve("api.yaml"));
      assertThat(rules.reload()).isEqualTo(Rules.Outcome.APPLIED);
      assertThat(rules.current().domains()).containsExactly("edge");
    }
  }

  /**
   * A rules directory swapped by moving a symbolic link between two versions, as deployments of
   * envoyproxy/ratelimit and Kubernetes ConfigMaps do, thousands of times while the rules are
   * reloaded: every set in force is one version whole, never an empty set nor a mix of both.
   */
  @Test
  void aDirectorySwappedByItsLinkIsReadWholeFromOneVersion(@TempDir Path dir) throws Exception {
    for (int v = 1; v <= 2; v++) {
      Path version = Files.createDirectories(dir.resolve("v" + v));
      Files.writeString(version.resolve("edge.yaml"), "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit:"
          + " {unit: minute, requests_per_unit: " + v + "}\n");
      Files.writeString(version.resolve("api.yaml"), "domain: api\ndescriptors:\n  - key: ip\n    rate_limit:"
          + " {unit: minute, requests_per_unit: " + v + "}\n");
    }
    Path current = dir.resolve("current");
    Files.createSymbolicLink(current, dir.resolve("v1"));
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger swaps = new AtomicInteger();
    Thread swapper = new Thread(() -> {
      Path next = dir.resolve("next");
      while (!stop.get()) {
        try {
          Files.deleteIfExists(next);
          Files.createSymbolicLink(next, dir.resolve(swaps.get() % 2 == 0 ? "v2" : "v1"));
          Files.move(next, current, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
          swaps.incrementAndGet();
        } catch (IOException e) {
          throw new UncheckedIOException(e);
        }
      }
    });
    try (Rules rules = Rules.load(List.of(current))) {
      swapper.start();
      int reloads = 0;
      while (swaps.get() < 3_000 && reloads < 200_000) {
        rules.reload();
        reloads++;
        RuleSet set = rules.current();
        assertThat(set.domains()).as("after %d swaps", swaps.get()).containsExactlyInAnyOrder("api", "edge");
        long edge = set.match("edge", List.of(new Entry("ip", "1"))).requestsPerUnit();
        long api = set.match("api", List.of(new Entry("ip", "1"))).requestsPerUnit();
        assertThat(api).as("both files from one version, after %d swaps", swaps.get()).isEqualTo(edge);
      }
      assertThat(swaps.get()).as("swaps in %d reloads", reloads).isGreaterThanOrEqualTo(3_000);
      assertThat(rules.status().applied()).as("versions applied").isPositive();
    } finally {
      stop.set(true);
      swapper.join();
    }
  }

  @Test
  void anEmptyDirectoryIsRefusedOnReloadKeepingTheRulesInForce(@TempDir Path dir) throws Exception {
    Path file = dir.resolve("edge.yaml");
    Files.writeString(file, "domain: edge\ndescriptors:\n  - key: ip\n    rate_limit: {unit: minute,"
        + " requests_per_unit: 10}\n");
    try (Rules rules = Rules.load(List.of(dir))) {
      RuleSet good = rules.current();
      Files.delete(file);
      assertThat(rules.reload()).isEqualTo(Rules.Outcome.REFUSED);
      assertThat(rules.current()).isSameAs(good);
      assertThat(rules.status().lastError()).startsWith("no rules files in [" + dir + "] now");
    }
  }

  @Test
  void aMissingFileIsRefusedAtStart(@TempDir Path dir) {
    Path missing = dir.resolve("nope.yaml");
    assertThatThrownBy(() -> Rules.load(List.of(missing))).isInstanceOf(RulesException.class)
        .hasMessage(missing + ": no such file; --rules takes a rules file or a directory of"
            + " *.yaml files");
  }
}
