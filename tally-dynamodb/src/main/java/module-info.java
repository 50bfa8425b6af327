/** The DynamoDB store ({@code dynamodb:}). */
module dev.tally.dynamodb {
  requires transitive dev.tally;
  requires software.amazon.awssdk.services.dynamodb;
  requires software.amazon.awssdk.core;
  requires software.amazon.awssdk.awscore;
  requires software.amazon.awssdk.regions;
  requires software.amazon.awssdk.auth;
  requires software.amazon.awssdk.http;
  requires software.amazon.awssdk.utils;
  requires software.amazon.awssdk.http.apache5;
  requires software.amazon.awssdk.retries;
  requires software.amazon.awssdk.retries.api;

  // Clients finds an async HTTP client (netty-nio-client) on the path, if there is one.
  uses software.amazon.awssdk.http.async.SdkAsyncHttpService;

  provides dev.tally.spi.StoreProvider with dev.tally.dynamodb.DynamoDbStoreProvider;
}
