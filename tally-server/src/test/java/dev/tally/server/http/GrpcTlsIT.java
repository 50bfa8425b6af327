package dev.tally.server.http;

import static dev.tally.server.http.EnvoyRlsIT.call;
import static dev.tally.server.http.EnvoyRlsIT.tenant;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitResponse.Code;
import io.envoyproxy.envoy.service.ratelimit.v3.RateLimitServiceGrpc;
import io.grpc.ManagedChannel;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.GrpcSslContexts;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code tally serve --tls-cert CERT --tls-key KEY --grpc-port 0} as a real process: the gRPC
 * port serves TLS with the HTTP port's certificate (ALPN h2) to a grpc-java client that trusts
 * it, refuses a cleartext client and keeps serving, and an unusable key stops the server before
 * it listens.
 */
class GrpcTlsIT {
  static NettyChannelBuilder to(int port) {
    return NettyChannelBuilder.forAddress("127.0.0.1", port).overrideAuthority("localhost");
  }

  static int grpcPort(ServerProcess server) throws Exception {
    String line = server.nextLine();
    assertThat(line).matches("grpc listening on 127\\.0\\.0\\.1:\\d+");
    return Integer.parseInt(line.substring(line.lastIndexOf(':') + 1));
  }

  @Test
  void theGrpcPortServesTlsAndRefusesCleartext(@TempDir Path dir) throws Exception {
    SelfSigned cert = SelfSigned.make(dir, "server");
    Path rules = dir.resolve("edge.yaml");
    Files.writeString(rules, EnvoyRlsIT.RULES);
    try (ServerProcess server = ServerProcess.start("--store", "mem:", "--rules",
        rules.toString(), "--grpc-port", "0", "--tls-cert", cert.cert().toString(), "--tls-key",
        cert.key().toString())) {
      assertThat(server.uri.getScheme()).isEqualTo("https");
      int port = grpcPort(server);
      ManagedChannel tls = to(port)
          .sslContext(GrpcSslContexts.forClient().trustManager(cert.cert().toFile()).build())
          .build();
      ManagedChannel plain = to(port).usePlaintext().build();
      try {
        RateLimitResponse first = call(tls, tenant("acme"));
        assertThat(first.getOverallCode()).isEqualTo(Code.OK);
        assertThat(first.getStatuses(0).getCurrentLimit().getRequestsPerUnit()).isEqualTo(2);
        assertThat(first.getStatuses(0).getLimitRemaining()).isEqualTo(1);

        StatusRuntimeException refused =
            catchThrowableOfType(StatusRuntimeException.class, () -> call(plain, tenant("acme")));
        assertThat(refused).as("a cleartext call to the TLS port").isNotNull();
        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);

        // the refused call counted nothing, and the port still serves, on a new connection too
        assertThat(call(tls, tenant("acme")).getStatuses(0).getLimitRemaining()).isZero();
        ManagedChannel again = to(port)
            .sslContext(GrpcSslContexts.forClient().trustManager(cert.cert().toFile()).build())
            .build();
        try {
          assertThat(call(again, tenant("acme")).getOverallCode()).isEqualTo(Code.OVER_LIMIT);
        } finally {
          again.shutdownNow();
        }
      } finally {
        tls.shutdownNow();
        plain.shutdownNow();
      }
    }
  }

  @Test
  void aClientThatDoesNotTrustTheCertificateIsRefused(@TempDir Path dir) throws Exception {
    SelfSigned cert = SelfSigned.make(dir, "server");
    SelfSigned other = SelfSigned.make(dir, "other");
    Path rules = dir.resolve("edge.yaml");
    Files.writeString(rules, EnvoyRlsIT.RULES);
    try (ServerProcess server = ServerProcess.start("--store", "mem:", "--rules",
        rules.toString(), "--grpc-port", "0", "--tls-cert", cert.cert().toString(), "--tls-key",
        cert.key().toString())) {
      ManagedChannel stranger = to(grpcPort(server))
          .sslContext(GrpcSslContexts.forClient().trustManager(other.cert().toFile()).build())
          .build();
      try {
        StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
            () -> call(stranger, tenant("acme")));
        assertThat(refused).as("a call that does not trust the certificate").isNotNull();
        assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
      } finally {
        stranger.shutdownNow();
      }
    }
  }

  @Test
  void anUnusableKeyOrCertificateStopsTheServerBeforeItListens(@TempDir Path dir)
      throws Exception {
    SelfSigned cert = SelfSigned.make(dir, "server");
    SelfSigned other = SelfSigned.make(dir, "other");
    Path rules = dir.resolve("edge.yaml");
    Files.writeString(rules, EnvoyRlsIT.RULES);
    Path garbage = Files.writeString(dir.resolve("garbage.pem"), "not a certificate\n");

    EnvoyRlsIT.Run wrongKey = EnvoyRlsIT.run(dir, "serve", "--store", "mem:", "--port", "0",
        "--rules", rules.toString(), "--grpc-port", "0", "--tls-cert", cert.cert().toString(),
        "--tls-key", other.key().toString());
    assertThat(wrongKey.exit()).isEqualTo(2);
    assertThat(wrongKey.out()).isEmpty();
    assertThat(wrongKey.err()).isEqualTo("tally: cannot use --tls-cert " + cert.cert()
        + " and --tls-key " + other.key() + ": the key in " + other.key() + " is not the private"
        + " key of the first certificate in " + cert.cert() + "; give the key that certificate"
        + " was issued for (PEM files: the certificate chain, and the private key in PKCS#8)\n");

    EnvoyRlsIT.Run badCert = EnvoyRlsIT.run(dir, "serve", "--store", "mem:", "--port", "0",
        "--rules", rules.toString(), "--grpc-port", "0", "--tls-cert", garbage.toString(),
        "--tls-key", cert.key().toString());
    assertThat(badCert.exit()).isEqualTo(2);
    assertThat(badCert.out()).isEmpty();
    assertThat(badCert.err()).startsWith("tally: cannot use --tls-cert " + garbage)
        .contains("File does not contain valid certificates: " + garbage);
  }
}
