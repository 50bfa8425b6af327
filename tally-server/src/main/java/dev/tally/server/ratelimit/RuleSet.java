package dev.tally.server.ratelimit;

import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The rules of every domain, as loaded from a set of files at one moment: immutable, so a reload
 * builds a new one and swaps it in whole, and a request that read this one finishes with it.
 *
 * <p>Matching follows envoyproxy/ratelimit. A descriptor's entries are matched one level per
 * entry: at each level, the rule whose key and value both equal the entry's wins, then one whose
 * value ends in {@code *} and is a prefix of the entry's value (the first such in the file), then
 * one with the key alone. A limit applies only if it sits at the level of the descriptor's last
 * entry: {@code (a=1), (b=2)} does not match a rule for {@code a=1} that has no nested
 * {@code b}, nor does {@code (a=1)} match a rule nested under it.
 */
public final class RuleSet {
  /** No rules at all. */
  public static final RuleSet EMPTY = new RuleSet(Map.of(), List.of());

  /** One domain: its descriptors, and the file it came from. */
  record Domain(String name, Level root, String file) {}

  /** The descriptors of one level, by key. */
  record Level(Map<String, KeyRules> byKey) {
    static final Level EMPTY = new Level(Map.of());
  }

  /**
   * What a level says for one key: the descriptors with a value, those whose value ends in
   * {@code *} (by prefix, in file order), and the one without a value, if any.
   */
  record KeyRules(Map<String, Node> exact, List<Wildcard> wildcards, Node any) {}

  /** A descriptor whose value ended in {@code *}: any value starting with {@code prefix}. */
  record Wildcard(String prefix, Node node) {}

  /** One descriptor: its limit (or null) and the level nested under it. */
  record Node(Rule rule, Level children) {}

  private final Map<String, Domain> domains;
  private final List<String> files;

  RuleSet(Map<String, Domain> domains, List<String> files) {
    this.domains = Map.copyOf(domains);
    this.files = List.copyOf(files);
  }

  /** Whether any file defines {@code domain}. */
  public boolean hasDomain(String domain) {
    return domains.containsKey(domain);
  }

  /** The domains, sorted. */
  public Set<String> domains() {
    return new TreeSet<>(domains.keySet());
  }

  /** The files these rules were read from. */
  public List<String> files() {
    return files;
  }

  /** The rule that applies to {@code entries} in {@code domain}, or null if none does. */
  public Rule match(String domain, List<Entry> entries) {
    Domain d = domains.get(domain);
    if (d == null || entries.isEmpty()) {
      return null;
    }
    Level level = d.root();
    for (int i = 0; i < entries.size(); i++) {
      Node node = find(level, entries.get(i));
      if (node == null) {
        return null;
      }
      if (i == entries.size() - 1) {
        return node.rule();
      }
      if (node.children().byKey().isEmpty()) {
        return null; // the request goes deeper than the rules
      }
      level = node.children();
    }
    return null;
  }

  private static Node find(Level level, Entry entry) {
    KeyRules k = level.byKey().get(entry.key());
    if (k == null) {
      return null;
    }
    Node exact = k.exact().get(entry.value());
    if (exact != null) {
      return exact;
    }
    for (Wildcard w : k.wildcards()) {
      if (entry.value().startsWith(w.prefix())) {
        return w.node();
      }
    }
    return k.any();
  }
}
