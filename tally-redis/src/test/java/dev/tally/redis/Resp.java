package dev.tally.redis;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A few lines of RESP2 over a socket: what the test harness uses to set servers up and inspect
 * them, so that no test depends on the client under test to check the client under test.
 * Replies are {@code String}, {@code Long}, {@code List<Object>} or {@code null}; an error reply
 * throws {@link ErrorReply}.
 */
final class Resp {
  private Resp() {}

  /** An error reply from the server. */
  static final class ErrorReply extends RuntimeException {
    private static final long serialVersionUID = 1L;

    ErrorReply(String message) {
      super(message);
    }
  }

  /** Sends one command to 127.0.0.1:{@code port} on a fresh connection and returns the reply. */
  static Object call(int port, String... args) {
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress("127.0.0.1", port), 1000);
      socket.setSoTimeout(5000);
      OutputStream out = socket.getOutputStream();
      ByteArrayOutputStream request = new ByteArrayOutputStream();
      request.writeBytes(("*" + args.length + "\r\n").getBytes(StandardCharsets.UTF_8));
      for (String arg : args) {
        byte[] bytes = arg.getBytes(StandardCharsets.UTF_8);
        request.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.UTF_8));
        request.writeBytes(bytes);
        request.writeBytes("\r\n".getBytes(StandardCharsets.UTF_8));
      }
      out.write(request.toByteArray());
      out.flush();
      return read(new BufferedInputStream(socket.getInputStream()));
    } catch (IOException e) {
      throw new UncheckedIOException("redis at port " + port + ": " + e.getMessage(), e);
    }
  }

  private static Object read(InputStream in) throws IOException {
    int type = in.read();
    String line = line(in);
    switch (type) {
      case '+':
        return line;
      case '-':
        throw new ErrorReply(line);
      case ':':
        return Long.parseLong(line);
      case '$': {
        int n = Integer.parseInt(line);
        if (n < 0) {
          return null;
        }
        byte[] bytes = in.readNBytes(n);
        line(in);
        return new String(bytes, StandardCharsets.UTF_8);
      }
      case '*': {
        int n = Integer.parseInt(line);
        if (n < 0) {
          return null;
        }
        List<Object> items = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
          try {
            items.add(read(in));
          } catch (ErrorReply e) {
            items.add(e);
          }
        }
        return items;
      }
      default:
        throw new IOException("unexpected RESP type " + (char) type + " " + line);
    }
  }

  private static String line(InputStream in) throws IOException {
    ByteArrayOutputStream b = new ByteArrayOutputStream();
    for (int c; (c = in.read()) != '\r'; ) {
      if (c < 0) {
        throw new IOException("connection closed mid-reply");
      }
      b.write(c);
    }
    in.read(); // '\n'
    return b.toString(StandardCharsets.UTF_8);
  }
}
