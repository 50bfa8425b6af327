package dev.tally.server.http;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/**
 * A self-signed certificate for localhost and 127.0.0.1 and its PKCS#8 key, as PEM files openssl
 * makes, for {@code tally serve --tls-cert CERT --tls-key KEY}.
 */
record SelfSigned(Path cert, Path key) {
  /** Makes {@code NAME.pem} and {@code NAME.key} in {@code dir}. */
  static SelfSigned make(Path dir, String name) throws Exception {
    Path cert = dir.resolve(name + ".pem");
    Path key = dir.resolve(name + ".key");
    Process gen = new ProcessBuilder("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
        "-keyout", key.toString(), "-out", cert.toString(), "-days", "1", "-subj", "/CN=localhost",
        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1")
        .redirectErrorStream(true).start();
    String out = new String(gen.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(gen.waitFor()).as(out).isZero();
    return new SelfSigned(cert, key);
  }

  /** A client context that trusts this certificate alone. */
  SSLContext trusting() throws Exception {
    Certificate c;
    try (InputStream in = Files.newInputStream(cert)) {
      c = CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
    KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
    ks.load(null, null);
    ks.setCertificateEntry("tally", c);
    TrustManagerFactory tmf =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    tmf.init(ks);
    SSLContext ctx = SSLContext.getInstance("TLS");
    ctx.init(null, tmf.getTrustManagers(), null);
    return ctx;
  }
}
