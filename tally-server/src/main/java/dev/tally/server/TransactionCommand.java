package dev.tally.server;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.Durations;
import dev.tally.server.app.TxOp;
import dev.tally.server.app.TxResult;
import dev.tally.server.app.Specs;
import dev.tally.server.http.TransactionOps;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

/**
 * {@code tally transaction 'incr req:total' 'incr req:path:/a' 'get b'}: several counter
 * operations applied atomically, all or none, as {@code POST /v1/transactions} applies them.
 *
 * <p>Each operation is written as the command that does it alone ({@code incr KEY [DELTA]
 * [--default N] [--must-exist]}, {@code decr ...}, {@code put KEY VALUE [--ttl D]},
 * {@code get KEY}, {@code del KEY}), or as the JSON object the HTTP body's {@code ops} array
 * holds; {@code -} reads them from stdin, one per line, and {@code --file} reads a whole HTTP
 * body. The words become those JSON objects, so every operation, however written, is checked
 * by the HTTP API's own parser ({@link TransactionOps}) and means the same.
 */
@Command(name = "transaction", aliases = "tx", mixinStandardHelpOptions = true,
    description = {
        "Apply several counter operations atomically: all of them or none.",
        "Print one result per operation, in order: the value (incr, decr, put, get),",
        "'missing' (get of a missing counter, del of none) or 'deleted'."})
final class TransactionCommand implements Callable<Integer> {
  private static final String USAGE_EXAMPLE = "tally transaction 'incr req:total' 'get views'";

  @ParentCommand
  TallyCommand root;

  @Parameters(paramLabel = "OP", arity = "0..*", description = "An operation: incr KEY [DELTA]"
      + " [--default N] [--must-exist], decr (the same), put KEY VALUE [--ttl DURATION], get KEY,"
      + " del KEY; or a JSON object as in the HTTP body's ops, {\"op\":\"incr\",\"key\":\"a b\"}."
      + " - reads operations from stdin, one per line.")
  List<String> ops = new ArrayList<>();

  @Option(names = "--file", paramLabel = "FILE", description = "Read a POST /v1/transactions"
      + " body, {\"ops\":[...]}, from FILE (- for stdin) instead.")
  String file;

  @Override
  public Integer call() {
    List<TxOp> parsed = parse();
    return root.run(app -> app.transaction(parsed), TransactionCommand::plain);
  }

  private List<TxOp> parse() {
    if (file != null) {
      if (!ops.isEmpty()) {
        throw new IllegalArgumentException("give operations or --file, not both");
      }
      return TransactionOps.ofBody(readFile());
    }
    if (ops.isEmpty()) {
      throw new IllegalArgumentException("give at least one operation, e.g. " + USAGE_EXAMPLE
          + ", or - to read them from stdin");
    }
    List<String> lines = new ArrayList<>();
    for (String op : ops) {
      if (StdinArgument.isStdin(root.spec.commandLine(), op)) {
        lines.addAll(StdinArgument.lines(root.stdin, StdinArgument.What.OPERATIONS));
      } else {
        lines.add(op);
      }
    }
    List<byte[]> objects = new ArrayList<>(lines.size());
    for (int i = 0; i < lines.size(); i++) {
      String line = lines.get(i);
      objects.add(line.stripLeading().startsWith("{")
          ? line.getBytes(StandardCharsets.UTF_8) : words(i, line));
    }
    return TransactionOps.ofObjects(objects);
  }

  private byte[] readFile() {
    if (file.equals(StdinArgument.DASH)) {
      return StdinArgument.bytes(root.stdin);
    }
    try {
      return Files.readAllBytes(Path.of(file));
    } catch (NoSuchFileException e) {
      throw new IllegalArgumentException("--file " + file + ": no such file");
    } catch (IOException e) {
      throw new IllegalArgumentException("--file " + file + ": cannot read it (" + e + ")");
    }
  }

  /**
   * One operation in words, {@code incr views 5 --default 10}, as the JSON object of the HTTP
   * body. Numbers and durations are read as the single commands read them (and refused with
   * their messages); the rest is left to the HTTP parser.
   */
  private static byte[] words(int index, String line) {
    String where = "ops[" + index + "] '" + line.strip() + "': ";
    List<String> positional = new ArrayList<>();
    ObjectNode o = JsonNodeFactory.instance.objectNode();
    String[] tokens = line.strip().split("\\s+", -1);
    String op = tokens[0].toLowerCase(Locale.ROOT);
    boolean counting = op.equals("incr") || op.equals("decr");
    String options = counting ? "--default N, --must-exist" : op.equals("put") ? "--ttl DURATION"
        : "none";
    switch (op) {
      case "incr", "decr", "put", "get" -> o.put("op", op);
      case "del", "delete" -> o.put("op", "delete");
      default -> throw new IllegalArgumentException(where + "'" + tokens[0] + "' is not an"
          + " operation: expected incr, decr, put, get or del (or a JSON object)");
    }
    for (int t = 1; t < tokens.length; t++) {
      String token = tokens[t];
      String name = token;
      String value = null;
      int eq = token.indexOf('=');
      if (token.startsWith("--") && eq > 0) {
        name = token.substring(0, eq);
        value = token.substring(eq + 1);
      }
      boolean takesValue = (counting && name.equals("--default")) || (op.equals("put") && name.equals("--ttl"));
      if (takesValue && value == null) {
        if (t + 1 == tokens.length) {
          throw new IllegalArgumentException(where + name + " needs a value, e.g. "
              + (name.equals("--ttl") ? "--ttl 1h" : "--default 10"));
        }
        value = tokens[++t];
      }
      if (takesValue && name.equals("--default")) {
        put(o, "default", number(where, value, "default"));
      } else if (takesValue) {
        try {
          Durations.parse(value);
        } catch (IllegalArgumentException e) {
          throw new IllegalArgumentException(where + "--ttl: " + e.getMessage());
        }
        o.put("ttl", value);
      } else if (counting && token.equals("--must-exist")) {
        o.put("mustExist", true);
      } else if (token.startsWith("--") && token.length() > 2) {
        throw new IllegalArgumentException(where + "unknown option '" + name + "' for " + op
            + "; its options: " + options);
      } else {
        positional.add(token);
      }
    }
    int most = counting || op.equals("put") ? 2 : 1;
    if (positional.isEmpty()) {
      throw new IllegalArgumentException(where + "missing KEY, e.g. '" + op + " views"
          + (op.equals("put") ? " 5" : "") + "'");
    }
    if (positional.size() > most) {
      throw new IllegalArgumentException(where + "unexpected '" + positional.get(most)
          + "' (a key with spaces goes in a JSON object: {\"op\":\"" + o.get("op").asText()
          + "\",\"key\":\"...\"})");
    }
    o.put("key", positional.get(0));
    if (positional.size() == 2) {
      put(o, counting ? "delta" : "value", number(where, positional.get(1), counting ? "delta" : "value"));
    } else if (op.equals("put")) {
      throw new IllegalArgumentException(where + "missing VALUE, e.g. 'put " + positional.get(0)
          + " 5'");
    }
    try {
      return new ObjectMapper().writeValueAsBytes(o);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static Number number(String where, String text, String what) {
    try {
      return Specs.number(text, what);
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException(where + e.getMessage());
    }
  }

  private static void put(ObjectNode o, String field, Number n) {
    o.set(field, n instanceof Double d ? o.numberNode(d) : o.numberNode(n.longValue()));
  }

  /** One line per result: the value, {@code missing} or {@code deleted}. */
  static String plain(TxResult result) {
    StringBuilder b = new StringBuilder();
    for (TxResult.Item r : result.results()) {
      b.append(b.length() == 0 ? "" : "\n");
      if (r.deleted() != null) {
        b.append(r.deleted() ? "deleted" : "missing");
      } else {
        b.append(r.value() == null ? "missing" : r.value().toString());
      }
    }
    return b.toString();
  }
}
