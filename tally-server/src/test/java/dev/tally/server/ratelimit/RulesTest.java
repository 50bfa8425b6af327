package dev.tally.server.ratelimit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
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
            + " detailed_metric, key, rate_limit, shadow_mode, value");
    refused("domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: fortnight,"
        + " requests_per_unit: 1}\n",
        "test.yaml:4: unit 'fortnight' is not one of second, minute, hour, day, month, year");
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

  @Test
  void aMissingFileIsRefusedAtStart(@TempDir Path dir) {
    Path missing = dir.resolve("nope.yaml");
    assertThatThrownBy(() -> Rules.load(List.of(missing))).isInstanceOf(RulesException.class)
        .hasMessage(missing + ": no such file; --rules takes a rules file or a directory of"
            + " *.yaml files");
  }
}
