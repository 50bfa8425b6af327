package dev.tally.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.tally.Tally;
import dev.tally.redis.RedisSettings.Topology;
import io.lettuce.core.RedisCredentials;
import io.lettuce.core.RedisURI;
import io.lettuce.core.SslVerifyMode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The store URI forms of docs/redis.md, and the messages for the wrong ones. */
class RedisSettingsTest {

  @Test
  void standaloneWithDefaults() {
    RedisSettings s = RedisSettings.parse("redis://localhost");
    assertThat(s.topology).isEqualTo(Topology.STANDALONE);
    RedisURI u = s.uris.get(0);
    assertThat(u.getHost()).isEqualTo("localhost");
    assertThat(u.getPort()).isEqualTo(6379);
    assertThat(u.getDatabase()).isZero();
    assertThat(u.isSsl()).isFalse();
    assertThat(s.timeout).isEqualTo(Duration.ofSeconds(2));
  }

  @Test
  void standaloneWithEverything() {
    RedisSettings s = RedisSettings.parse("rediss://app:p%40ss@cache.internal:6380/3?timeout=500ms&clientName=web&verifyPeer=ca");
    RedisURI u = s.uris.get(0);
    assertThat(u.getHost()).isEqualTo("cache.internal");
    assertThat(u.getPort()).isEqualTo(6380);
    assertThat(u.getDatabase()).isEqualTo(3);
    assertThat(u.isSsl()).isTrue();
    assertThat(u.getVerifyMode()).isEqualTo(SslVerifyMode.CA);
    RedisCredentials credentials = u.getCredentialsProvider().resolveCredentials().block();
    assertThat(credentials.getUsername()).isEqualTo("app");
    assertThat(new String(credentials.getPassword())).isEqualTo("p@ss");
    assertThat(u.getClientName()).isEqualTo("web");
    assertThat(s.timeout).isEqualTo(Duration.ofMillis(500));
  }

  @Test
  void passwordWithoutUser() {
    RedisURI u = RedisSettings.parse("redis://secret@h:1").uris.get(0);
    RedisCredentials credentials = u.getCredentialsProvider().resolveCredentials().block();
    assertThat(credentials.getUsername()).isNull();
    assertThat(new String(credentials.getPassword())).isEqualTo("secret");
  }

  @Test
  void sentinelInBothSpellings() {
    for (String uri : new String[] {
        "redis-sentinel://s1:26379,s2:26380,s3/2?sentinelMasterId=mymaster&timeout=1s",
        "redis-sentinel://s1:26379,s2:26380,s3/2?timeout=1s#mymaster"}) {
      RedisSettings s = RedisSettings.parse(uri);
      assertThat(s.topology).isEqualTo(Topology.SENTINEL);
      RedisURI u = s.uris.get(0);
      assertThat(u.getSentinelMasterId()).isEqualTo("mymaster");
      assertThat(u.getSentinels()).extracting(RedisURI::getPort).containsExactly(26379, 26380, 26379);
      assertThat(u.getDatabase()).isEqualTo(2);
      assertThat(s.timeout).isEqualTo(Duration.ofSeconds(1));
    }
  }

  @Test
  void clusterSeeds() {
    RedisSettings s = RedisSettings.parse("redis-cluster://h1:7000,h2:7001,[::1]:7002");
    assertThat(s.topology).isEqualTo(Topology.CLUSTER);
    assertThat(s.uris).extracting(RedisURI::getHost).containsExactly("h1", "h2", "::1");
    assertThat(s.uris).extracting(RedisURI::getPort).containsExactly(7000, 7001, 7002);
  }

  @Test
  void limiterOptions() {
    RedisSettings plain = RedisSettings.parse("redis://h");
    assertThat(plain.denyCache).isFalse();
    assertThat(plain.batch).isTrue();
    assertThat(plain.spinWait).isTrue();
    RedisSettings s = RedisSettings.parse("redis://h?denyCache=true&denyCacheSize=50&batch=false&spinWait=false");
    assertThat(s.denyCache).isTrue();
    assertThat(s.denyCacheSize).isEqualTo(50);
    assertThat(s.batch).isFalse();
    assertThat(s.spinWait).isFalse();
    assertThatThrownBy(() -> RedisSettings.parse("redis://h?spinWait=on")).hasMessageContaining("true or false");
    assertThatThrownBy(() -> RedisSettings.parse("redis://h?denyCache=yes")).hasMessageContaining("true or false");
    assertThatThrownBy(() -> RedisSettings.parse("redis://h?denyCacheSize=0")).hasMessageContaining("positive");
    assertThatThrownBy(() -> RedisSettings.parse("redis://h?batch=1")).hasMessageContaining("true or false");
  }

  @Test
  void mistakesAreExplained() {
    assertThatThrownBy(() -> RedisSettings.parse("redis://h:1/x")).hasMessageContaining("database number");
    assertThatThrownBy(() -> RedisSettings.parse("redis://h1,h2")).hasMessageContaining("redis-cluster://");
    assertThatThrownBy(() -> RedisSettings.parse("redis-sentinel://s1")).hasMessageContaining("sentinelMasterId");
    assertThatThrownBy(() -> RedisSettings.parse("redis-cluster://h:7000/1")).hasMessageContaining("database 0");
    assertThatThrownBy(() -> RedisSettings.parse("redis://h?timeout=2")).hasMessageContaining("500ms");
    assertThatThrownBy(() -> RedisSettings.parse("redis://h?tiemout=2s")).hasMessageContaining("unknown option 'tiemout'");
    assertThatThrownBy(() -> RedisSettings.parse("redis://h:99999")).hasMessageContaining("out of range");
    assertThatThrownBy(() -> RedisSettings.parse("redis://h?verifyPeer=none")).hasMessageContaining("TLS");
    assertThatThrownBy(() -> RedisSettings.parse("redis://")).hasMessageContaining("no host");
  }

  @Test
  void tlsFilesAreCheckedWhenTheUriIsRead(@TempDir Path dir) throws IOException {
    Path ca = Files.writeString(dir.resolve("ca.pem"), "-----BEGIN CERTIFICATE-----\n");
    Path cert = Files.writeString(dir.resolve("client.pem"), "-----BEGIN CERTIFICATE-----\n");
    Path key = Files.writeString(dir.resolve("client.key"), "-----BEGIN PRIVATE KEY-----\n");
    RedisSettings s = RedisSettings.parse("rediss://h?caCert=" + ca + "&clientCert=" + cert + "&clientKey=" + key);
    assertThat(s.caCert).isEqualTo(ca);
    assertThat(s.clientCert).isEqualTo(cert);
    assertThat(s.clientKey).isEqualTo(key);
    assertThat(RedisSettings.parse("rediss://h").caCert).as("the JVM's trust store").isNull();
    assertThatThrownBy(() -> RedisSettings.parse("redis://h?caCert=" + ca))
        .hasMessageContaining("caCert applies to TLS only");
    assertThatThrownBy(() -> RedisSettings.parse("rediss://h?caCert=" + dir.resolve("typo.pem")))
        .hasMessageContaining("caCert names '" + dir.resolve("typo.pem") + "', which is not a readable file");
    assertThatThrownBy(() -> RedisSettings.parse("rediss://h?caCert=" + dir))
        .hasMessageContaining("not a readable file");
    assertThatThrownBy(() -> RedisSettings.parse("rediss://h?clientCert=" + cert))
        .hasMessageContaining("clientCert and clientKey go together");
    assertThatThrownBy(() -> RedisSettings.parse("rediss://h?clientKey=" + key))
        .hasMessageContaining("clientCert and clientKey go together");
  }

  @Test
  void passwordsNeverAppearInMessages() {
    assertThatThrownBy(() -> RedisSettings.parse("redis://app:hunter2@h/x"))
        .isInstanceOf(IllegalArgumentException.class)
        .message().doesNotContain("hunter2").contains("app:***@");
    assertThat(RedisSettings.redact("redis://hunter2@h")).isEqualTo("redis://***@h");
  }

  @Test
  void tallyFindsTheProviderForEveryScheme() {
    assertThat(new RedisStoreProvider().schemes()).contains("redis", "rediss", "redis-sentinel", "redis-cluster");
    assertThatThrownBy(() -> Tally.open("redis-cluster://h:7000/5"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("database 0");
  }
}
