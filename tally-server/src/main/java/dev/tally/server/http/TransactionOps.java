package dev.tally.server.http;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.tally.server.app.RequestException;
import dev.tally.server.app.TxOp;
import java.util.List;
import java.util.Set;

/**
 * The operations of a transaction read exactly as {@code POST /v1/transactions} reads them, for
 * the command line's {@code tally transaction}: the same fields, checks and messages, so an ops
 * file means the same thing to {@code curl -d @ops.json} and to {@code tally transaction --file}.
 */
public final class TransactionOps {
  static final String EXAMPLE = "{\"ops\": [{\"op\": \"incr\", \"key\": \"a\"}]}";
  private static final String OP_EXAMPLE = "{\"op\": \"incr\", \"key\": \"a\"}";

  private TransactionOps() {}

  /**
   * The operations of a request body, {@code {"ops": [...]}}.
   *
   * @throws IllegalArgumentException saying what was wrong, as the HTTP API's 400 does
   */
  public static List<TxOp> ofBody(byte[] body) {
    return Requests.ops(Body.parse(body, EXAMPLE, Set.of("ops")));
  }

  /**
   * Operations given one JSON object each, as if they were the items of a body's {@code ops}
   * array, in order; a message about item {@code i} names it {@code ops[i]}.
   *
   * @throws IllegalArgumentException saying what was wrong
   */
  public static List<TxOp> ofObjects(List<byte[]> objects) {
    ObjectNode body = Json.object();
    ArrayNode ops = body.putArray("ops");
    for (int i = 0; i < objects.size(); i++) {
      try {
        ops.add(Json.parseObject(objects.get(i), OP_EXAMPLE));
      } catch (RequestException e) {
        throw new RequestException("ops[" + i + "]: " + e.getMessage());
      }
    }
    return Requests.ops(Body.of(body, "", Set.of("ops")));
  }
}
