package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Counters;
import dev.tally.Limit;
import dev.tally.StoreException;
import dev.tally.StoreUnavailableException;
import dev.tally.Tally;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@code rediss://} against a real {@code redis-server} listening for TLS only on its TLS port,
 * with certificates from a private CA made for the run: the store trusts what {@code caCert}
 * names, checks the server's name unless told {@code verifyPeer=ca}, presents
 * {@code clientCert} when Redis demands one, and fails at once, saying why, when it cannot
 * trust the server or the server will not have it. The plain port stays open for the test's own
 * checks and configuration. {@code rediss-cluster://} runs against a Cluster whose nodes speak TLS
 * to clients and to each other, and {@code rediss-sentinel://} against a Sentinel group that uses
 * TLS throughout, through a failover.
 */
class TlsTest {
  private static Path dir;
  private static TestCertificates certs;
  private static Path ca;
  private static Path otherCa;
  private static RedisServer server;
  private static int tlsPort;

  @BeforeAll
  static void start() throws IOException {
    dir = Files.createTempDirectory("tally-tls-");
    certs = new TestCertificates(dir);
    ca = certs.authority("ca");
    otherCa = certs.authority("other-ca");
    certs.signed("ca", "server", "IP:127.0.0.1");
    certs.signed("ca", "elsewhere", "DNS:redis.elsewhere.test");
    certs.signed("ca", "client", "");
    certs.signed("other-ca", "stranger", "");
    tlsPort = RedisServer.freePort();
    server = RedisServer.start("--tls-port", Integer.toString(tlsPort),
        "--tls-cert-file", dir.resolve("server.pem").toString(), "--tls-key-file", certs.key("server").toString(),
        "--tls-ca-cert-file", ca.toString(), "--tls-auth-clients", "optional");
  }

  @AfterAll
  static void stop() throws IOException {
    if (server != null) {
      server.close();
    }
    try (Stream<Path> files = Files.walk(dir)) {
      files.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
    }
  }

  @AfterEach
  void restoreServer() {
    server.call("CONFIG", "SET", "tls-cert-file", dir.resolve("server.pem").toString(),
        "tls-key-file", certs.key("server").toString());
    server.call("CONFIG", "SET", "tls-auth-clients", "optional");
  }

  private static String uri(String host, String options) {
    return "rediss://" + host + ":" + tlsPort + "?timeout=2s" + options;
  }

  @Test
  void countsAndLimitsOverTlsWithThePrivateCaItIsGiven() {
    try (Tally tally = Tally.open(uri("127.0.0.1", "&caCert=" + ca))) {
      Counters counters = tally.counters("tls");
      assertThat(counters.incr("views", 3)).isEqualTo(3);
      assertThat(counters.incr("views", 4)).isEqualTo(7);
      assertThat(tally.limiter("tls-api", Limit.tokenBucket(2, 1, Duration.ofHours(1))).tryAcquire(2))
          .isTrue();
      assertThat(tally.limiter("tls-api", Limit.tokenBucket(2, 1, Duration.ofHours(1))).tryAcquire())
          .isFalse();
    }
    assertThat(server.call("GET", "tls:views")).as("the same data, read over the plain port").isEqualTo("7");
  }

  @Test
  void refusesAServerSignedByAnAuthorityItDoesNotTrust() {
    long start = System.nanoTime();
    assertThatThrownBy(() -> Tally.open(uri("127.0.0.1", ""))) // the JVM's trust store: not our CA
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("cannot connect to Redis")
        .hasMessageContaining("unable to find valid certification path")
        .hasMessageContaining("TLS: see the options caCert");
    assertThatThrownBy(() -> Tally.open(uri("127.0.0.1", "&caCert=" + otherCa)))
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("unable to find valid certification path");
    assertThat(Duration.ofNanos(System.nanoTime() - start)).as("failing, not hanging").isLessThan(Duration.ofSeconds(10));
  }

  @Test
  void checksTheServersNameUnlessToldToTrustTheAuthorityAlone() {
    server.call("CONFIG", "SET", "tls-cert-file", dir.resolve("elsewhere.pem").toString(),
        "tls-key-file", certs.key("elsewhere").toString());
    assertThatThrownBy(() -> Tally.open(uri("127.0.0.1", "&caCert=" + ca)))
        .as("a certificate for redis.elsewhere.test does not name 127.0.0.1")
        .isInstanceOf(StoreUnavailableException.class)
        .hasMessageContaining("No subject alternative names matching IP address 127.0.0.1");
    try (Tally tally = Tally.open(uri("127.0.0.1", "&caCert=" + ca + "&verifyPeer=ca"))) {
      assertThat(tally.counters("tls").incr("by-ca")).isEqualTo(1);
    }
    try (Tally tally = Tally.open(uri("127.0.0.1", "&verifyPeer=none"))) {
      assertThat(tally.counters("tls").incr("by-ca")).isEqualTo(2);
    }
  }

  @Test
  void presentsItsCertificateWhenRedisDemandsOne() {
    server.call("CONFIG", "SET", "tls-auth-clients", "yes");
    try (Tally tally = Tally.open(uri("127.0.0.1", "&caCert=" + ca + "&clientCert=" + dir.resolve("client.pem")
        + "&clientKey=" + certs.key("client")))) {
      assertThat(tally.counters("tls").incr("mutual")).isEqualTo(1);
    }
    long start = System.nanoTime();
    assertThatThrownBy(() -> {
      try (Tally tally = Tally.open(uri("127.0.0.1", "&caCert=" + ca))) {
        tally.counters("tls").incr("mutual"); // TLS 1.3: the refusal may come after the handshake
      }
    }).as("no client certificate").isInstanceOf(dev.tally.StoreException.class);
    assertThatThrownBy(() -> {
      try (Tally tally = Tally.open(uri("127.0.0.1", "&caCert=" + ca + "&clientCert=" + dir.resolve("stranger.pem")
          + "&clientKey=" + certs.key("stranger")))) {
        tally.counters("tls").incr("mutual");
      }
    }).as("a client certificate from another authority").isInstanceOf(dev.tally.StoreException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - start)).as("failing, not hanging").isLessThan(Duration.ofSeconds(15));
    assertThat(server.call("GET", "tls:mutual")).isEqualTo("1");
  }

  @Test
  void plainRedisOnTheTlsPortFailsWithinTheTimeout() {
    long start = System.nanoTime();
    assertThatThrownBy(() -> {
      try (Tally tally = Tally.open("redis://127.0.0.1:" + tlsPort + "?timeout=1s")) {
        tally.counters("tls").incr("plain");
      }
    }).isInstanceOf(dev.tally.StoreException.class);
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(10));
    assertThat(server.call("EXISTS", "tls:plain")).isEqualTo(0L);
  }

  @Test
  void aClusterOverTlsIsFoundFromOneSeedAndEveryKeyGoesToItsSlot() {
    try (RedisCluster cluster = RedisCluster.startTls(dir.resolve("server.pem"), certs.key("server"), ca)) {
      String oneSeed = cluster.uri().replaceFirst(",.*", "");
      assertThatThrownBy(() -> Tally.open(oneSeed + "?timeout=2s"))
          .isInstanceOf(StoreUnavailableException.class)
          .hasMessageContaining("unable to find valid certification path");
      try (Tally tally = Tally.open(oneSeed + "?timeout=2s&caCert=" + ca)) {
        Counters counters = tally.counters("tlsc");
        Set<RedisServer> nodes = new HashSet<>();
        Set<String> written = new HashSet<>();
        for (int i = 0; nodes.size() < cluster.nodes.size() || written.size() < 30; i++) {
          assertThat(counters.incr("k" + i, i + 1)).isEqualTo(i + 1);
          RedisServer node = cluster.nodeFor("tlsc:k" + i);
          assertThat(node.call("GET", "tlsc:k" + i)).as("on the primary of its slot").isEqualTo(Integer.toString(i + 1));
          nodes.add(node);
          written.add("k" + i);
        }
        assertThat(counters.keys("k")).as("SCAN over TLS on every primary").containsExactlyInAnyOrderElementsOf(written);
        tally.counters("{tlsc}").transaction(tx -> tx.incr("views").incr("clicks", 2));
        assertThat(cluster.nodeFor("{tlsc}:clicks").call("GET", "{tlsc}:clicks")).isEqualTo("2");
        assertThat(tally.limiter("tlsc-api", Limit.tokenBucket(2, 1, Duration.ofHours(1))).tryAcquire(2)).isTrue();
        assertThat(tally.limiter("tlsc-api", Limit.tokenBucket(2, 1, Duration.ofHours(1))).tryAcquire()).isFalse();
      }
    }
  }

  @Test
  void aSentinelGroupOverTlsFollowsAFailover() {
    try (SentinelGroup group = SentinelGroup.startTls(dir.resolve("server.pem"), certs.key("server"), ca);
        Tally tally = Tally.open(group.uri("&timeout=1s&caCert=" + ca))) {
      Counters counters = tally.counters("tlss");
      counters.put("k", 100);
      long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
      while (!"100".equals(group.second.call("GET", "tlss:k"))) {
        assertThat(System.nanoTime()).as("replication over TLS").isLessThan(deadline);
        RedisServer.sleep(20);
      }
      int before = group.primaryPort();

      group.sentinel.call("SENTINEL", "FAILOVER", SentinelGroup.NAME);
      deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(40);
      for (int inARow = 0; inARow < 20; ) {
        assertThat(System.nanoTime()).as("calls succeed on the new primary within 40 s").isLessThan(deadline);
        boolean switched = group.primaryPort() != before && "master".equals(group.second.info("replication").get("role"));
        try {
          counters.incr("k");
          inARow = switched ? inARow + 1 : 0;
        } catch (StoreException e) {
          inARow = 0;
          RedisServer.sleep(50);
        }
      }
      assertThat(Long.parseLong((String) group.second.call("GET", "tlss:k"))).as("on the promoted replica").isGreaterThan(100);
    }
  }
}
