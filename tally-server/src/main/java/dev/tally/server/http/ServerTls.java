package dev.tally.server.http;

import io.grpc.netty.GrpcSslContexts;
import io.netty.handler.codec.http2.Http2SecurityUtil;
import io.netty.handler.ssl.ApplicationProtocolConfig;
import io.netty.handler.ssl.ApplicationProtocolNames;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslProvider;
import io.netty.handler.ssl.SupportedCipherSuiteFilter;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.cert.CertificateFactory;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLException;

/**
 * The TLS contexts of one certificate chain and key: the HTTP port's, which offers {@code h2} and
 * {@code http/1.1} by ALPN, and the gRPC port's, which grpc-java configures for {@code h2} only
 * (a gRPC client that cannot negotiate it is refused). Both are built before anything listens,
 * so unusable files stop the server with the same message whichever port would have used them.
 */
final class ServerTls {
  private static final Pattern PKCS8 = Pattern.compile(
      "-----BEGIN PRIVATE KEY-----([A-Za-z0-9+/=\\s]+)-----END PRIVATE KEY-----");

  private ServerTls() {}

  /** The HTTP port's context. */
  static SslContext http(TallyServer.Settings settings) {
    try {
      return builder(settings)
          .ciphers(Http2SecurityUtil.CIPHERS, SupportedCipherSuiteFilter.INSTANCE)
          .applicationProtocolConfig(new ApplicationProtocolConfig(
              ApplicationProtocolConfig.Protocol.ALPN,
              ApplicationProtocolConfig.SelectorFailureBehavior.NO_ADVERTISE,
              ApplicationProtocolConfig.SelectedListenerFailureBehavior.ACCEPT,
              ApplicationProtocolNames.HTTP_2, ApplicationProtocolNames.HTTP_1_1))
          .build();
    } catch (SSLException | IllegalArgumentException e) {
      throw refused(settings, e);
    }
  }

  /** The gRPC port's context: grpc-java's ciphers and ALPN {@code h2}, on the JDK's TLS. */
  static SslContext grpc(TallyServer.Settings settings) {
    try {
      // the JDK provider, as on the HTTP port: netty-tcnative is not in the jar
      return GrpcSslContexts.configure(builder(settings), SslProvider.JDK).build();
    } catch (SSLException | IllegalArgumentException e) {
      throw refused(settings, e);
    }
  }

  private static SslContextBuilder builder(TallyServer.Settings settings) {
    SslContextBuilder b = SslContextBuilder.forServer(settings.tlsCertificate().toFile(),
            settings.tlsKey().toFile())
        .sslProvider(SslProvider.JDK);
    if (!keyFitsCertificate(settings.tlsCertificate(), settings.tlsKey())) {
      throw new IllegalArgumentException("the key in " + settings.tlsKey() + " is not the private"
          + " key of the first certificate in " + settings.tlsCertificate() + "; give the key"
          + " that certificate was issued for");
    }
    return b;
  }

  /**
   * Whether the key signs what the certificate's public key verifies. The JDK takes any pair and
   * every handshake would fail later, far from the cause. A pair this cannot read (a key
   * algorithm without a signature here, PEM that Netty reads and the JDK does not) counts as
   * fitting: Netty has already read it, and the handshake stays the judge.
   */
  private static boolean keyFitsCertificate(Path certificate, Path keyFile) {
    PublicKey publicKey;
    byte[] der;
    try (InputStream in = Files.newInputStream(certificate)) {
      publicKey = CertificateFactory.getInstance("X.509").generateCertificate(in).getPublicKey();
      Matcher m = PKCS8.matcher(Files.readString(keyFile, StandardCharsets.US_ASCII));
      if (!m.find()) {
        return true;
      }
      der = Base64.getMimeDecoder().decode(m.group(1));
    } catch (IOException | GeneralSecurityException | IllegalArgumentException e) {
      return true;
    }
    String algorithm = switch (publicKey.getAlgorithm()) {
      case "RSA" -> "SHA256withRSA";
      case "EC" -> "SHA256withECDSA";
      case "EdDSA", "Ed25519", "Ed448" -> "EdDSA";
      default -> null;
    };
    if (algorithm == null) {
      return true;
    }
    PrivateKey key;
    try {
      key = KeyFactory.getInstance(publicKey.getAlgorithm())
          .generatePrivate(new PKCS8EncodedKeySpec(der));
    } catch (InvalidKeySpecException e) {
      return false; // a key of another algorithm than the certificate's
    } catch (GeneralSecurityException e) {
      return true;
    }
    try {
      byte[] probe = "tally".getBytes(StandardCharsets.US_ASCII);
      Signature signer = Signature.getInstance(algorithm);
      signer.initSign(key);
      signer.update(probe);
      byte[] signature = signer.sign();
      Signature verifier = Signature.getInstance(algorithm);
      verifier.initVerify(publicKey);
      verifier.update(probe);
      return verifier.verify(signature);
    } catch (GeneralSecurityException e) {
      return false;
    }
  }

  private static IllegalArgumentException refused(TallyServer.Settings settings, Exception e) {
    return new IllegalArgumentException("cannot use --tls-cert " + settings.tlsCertificate()
        + " and --tls-key " + settings.tlsKey() + ": " + e.getMessage()
        + " (PEM files: the certificate chain, and the private key in PKCS#8)");
  }
}
