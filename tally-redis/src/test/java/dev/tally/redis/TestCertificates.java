package dev.tally.redis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A private certificate authority and certificates it signs, made with the {@code openssl}
 * command for one test run: what an operator's TLS setup for Redis looks like. Keys are P-256
 * (quick to make), written unencrypted as PKCS#8 PEM; certificates last two days.
 */
final class TestCertificates {
  private final Path dir;

  TestCertificates(Path dir) {
    this.dir = dir;
  }

  /** A self-signed CA: {@code name.pem} and {@code name.key}. */
  Path authority(String name) {
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", name + ".key", "-out", name + ".pem", "-days", "2", "-subj", "/CN=" + name);
    return dir.resolve(name + ".pem");
  }

  /**
   * A certificate signed by {@code authority}: {@code name.pem} and {@code name.key}, with the
   * subject alternative names given (such as {@code IP:127.0.0.1}, or none for a client).
   */
  Path signed(String authority, String name, String subjectAltNames) {
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
        "-keyout", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + name);
    List<String> sign = new ArrayList<>(List.of("x509", "-req", "-in", name + ".csr", "-CA", authority + ".pem",
        "-CAkey", authority + ".key", "-CAcreateserial", "-out", name + ".pem", "-days", "2"));
    if (!subjectAltNames.isEmpty()) {
      write(name + ".ext", "subjectAltName=" + subjectAltNames + "\n");
      sign.addAll(List.of("-extfile", name + ".ext"));
    }
    openssl(sign.toArray(String[]::new));
    return dir.resolve(name + ".pem");
  }

  Path key(String name) {
    return dir.resolve(name + ".key");
  }

  private void write(String file, String text) {
    try {
      Files.writeString(dir.resolve(file), text, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private void openssl(String... args) {
    List<String> command = new ArrayList<>();
    command.add("openssl");
    command.addAll(List.of(args));
    Process p;
    try {
      p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    } catch (IOException e) {
      throw new IllegalStateException("the TLS tests make their certificates with the openssl command, which"
          + " did not start (Debian: apt-get install openssl)", e);
    }
    try {
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " failed:\n" + out);
      }
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}
