package dev.tally.server.http;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.server.app.RequestException;
import dev.tally.server.ratelimit.Descriptor;
import dev.tally.server.ratelimit.Entry;
import dev.tally.server.ratelimit.NamedLimits;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The body of {@code POST /v1/ratelimit/{domain}}: the descriptors of a request to the
 * operator's named limits and the units each takes, as envoyproxy/ratelimit's {@code /json}
 * endpoint reads them.
 */
record NamedLimitRequest(List<Descriptor> descriptors, long hitsAddend) {
  private static final Set<String> BODY_FIELDS = Set.of("descriptors", "hitsAddend");
  private static final Set<String> DESCRIPTOR_FIELDS = Set.of("entries");
  private static final Set<String> ENTRY_FIELDS = Set.of("key", "value");
  static final String EXAMPLE = "{\"descriptors\": [{\"entries\": [{\"key\": \"remote_address\","
      + " \"value\": \"10.0.0.1\"}]}]}";

  /** Reads a request body: {@code {"descriptors": [...], "hitsAddend": 1}}. */
  static NamedLimitRequest parse(byte[] body) {
    Body b = Body.parse(body, EXAMPLE, BODY_FIELDS);
    JsonNode list = b.raw("descriptors");
    if (list == null || !list.isArray() || list.isEmpty()) {
      throw new RequestException("'descriptors' must be a list of at least one descriptor, e.g. "
          + EXAMPLE);
    }
    List<Descriptor> descriptors = new ArrayList<>(list.size());
    for (int i = 0; i < list.size(); i++) {
      String where = "descriptors[" + i + "]";
      ObjectNode d = Requests.object(list.get(i), where, "{\"entries\": [...]}");
      JsonNode entries = Body.of(d, where + ".", DESCRIPTOR_FIELDS).raw("entries");
      if (entries == null || !entries.isArray() || entries.isEmpty()) {
        throw new RequestException("'" + where + ".entries' must be a list of at least one"
            + " {\"key\": ..., \"value\": ...}");
      }
      List<Entry> es = new ArrayList<>(entries.size());
      for (int j = 0; j < entries.size(); j++) {
        String at = where + ".entries[" + j + "]";
        Body e = Body.of(Requests.object(entries.get(j), at, "{\"key\": ..., \"value\": ...}"),
            at + ".", ENTRY_FIELDS);
        String key = e.requiredString("key", "\"remote_address\"");
        if (key.isEmpty()) {
          throw new RequestException("'" + at + ".key' is empty");
        }
        String value = e.string("value");
        es.add(new Entry(key, value == null ? "" : value));
      }
      descriptors.add(new Descriptor(es, null));
    }
    long hits = b.integer("hitsAddend", 0);
    if (hits < 0 || hits > NamedLimits.MAX_UINT32) {
      throw new RequestException("'hitsAddend' must be from 0 to " + NamedLimits.MAX_UINT32
          + " (0 means 1), not " + hits);
    }
    return new NamedLimitRequest(descriptors, hits);
  }
}
