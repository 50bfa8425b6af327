package dev.tally.server.ratelimit;

import java.util.ArrayList;
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
 * value holds {@code *} and matches the entry's value (the first such in the file), then
 * one with the key alone. A limit applies only if it sits at the level of the descriptor's last
 * entry: {@code (a=1), (b=2)} does not match a rule for {@code a=1} that has no nested
 * {@code b}, nor does {@code (a=1)} match a rule nested under it.
 */
public final class RuleSet {
  public static final RuleSet EMPTY = new RuleSet(Map.of(), List.of());

  /**
   * One domain: its descriptors, the file it came from, and whether any wildcard of it shares
   * its count ({@link #countedAs}).
   */
  record Domain(String name, Level root, String file, boolean shares) {}

  /** The descriptors of one level, by key. */
  record Level(Map<String, KeyRules> byKey) {
    static final Level EMPTY = new Level(Map.of());
  }

  /**
   * What a level says for one key: the descriptors with a value, those whose value holds
   * {@code *} (in file order), and the one without a value, if any.
   */
  record KeyRules(Map<String, Node> exact, List<Wildcard> wildcards, Node any) {}

  /**
   * A descriptor whose value holds {@code *}, each matching any run of characters (so
   * {@code /api/*}, {@code *.example.com} and {@code bar*b}); with {@code shared}
   * ({@code share_threshold: true}) every value it matches counts in one limit, named by the
   * pattern, rather than each value apart.
   */
  record Wildcard(String pattern, boolean shared, Node node) {
    boolean matches(String value) {
      int star = pattern.indexOf('*');
      if (!value.startsWith(pattern.substring(0, star))) {
        return false;
      }
      int at = star;
      int from = star + 1;
      while (true) {
        int next = pattern.indexOf('*', from);
        String part = next < 0 ? pattern.substring(from) : pattern.substring(from, next);
        if (next < 0) {
          return value.length() - part.length() >= at && value.endsWith(part);
        }
        int found = value.indexOf(part, at);
        if (found < 0) {
          return false;
        }
        at = found + part.length();
        from = next + 1;
      }
    }
  }

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

  public Set<String> domains() {
    return new TreeSet<>(domains.keySet());
  }

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
    Node node = null;
    for (Entry e : entries) {
      node = find(level, e);
      if (node == null) {
        return null; // no rule for this entry, or the request goes deeper than the rules
      }
      level = node.children();
    }
    return node.rule();
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
    Wildcard w = wildcard(k, entry);
    return w != null ? w.node() : k.any();
  }

  /** The first wildcard of {@code k} that {@code entry}'s value matches, if no exact value does. */
  private static Wildcard wildcard(KeyRules k, Entry entry) {
    if (k.exact().containsKey(entry.value())) {
      return null;
    }
    for (Wildcard w : k.wildcards()) {
      if (w.matches(entry.value())) {
        return w;
      }
    }
    return null;
  }

  /**
   * The entries a limit counts {@code entries} under: themselves, except that a value matched by
   * a wildcard with {@code share_threshold} is replaced by the wildcard's pattern, so that every
   * value it matches shares one count.
   */
  public List<Entry> countedAs(String domain, List<Entry> entries) {
    Domain d = domains.get(domain);
    if (d == null || !d.shares()) {
      return entries;
    }
    List<Entry> out = new ArrayList<>(entries);
    Level level = d.root();
    for (int i = 0; i < entries.size() && level != null; i++) {
      Entry e = entries.get(i);
      KeyRules k = level.byKey().get(e.key());
      if (k == null) {
        break;
      }
      Wildcard w = wildcard(k, e);
      if (w != null && w.shared()) {
        out.set(i, new Entry(e.key(), w.pattern()));
      }
      Node node = find(level, e);
      level = node == null ? null : node.children();
    }
    return out;
  }
}
