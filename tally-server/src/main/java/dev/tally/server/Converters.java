package dev.tally.server;

import dev.tally.Durations;
import dev.tally.server.app.FailurePolicies;
import dev.tally.server.app.Specs;
import java.time.Duration;
import java.util.function.Function;
import picocli.CommandLine;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/**
 * Picocli converters over {@link Durations} and {@link Specs}, so the CLI reads values exactly as the HTTP API does:
 * every {@code Duration} and {@code Number} option and parameter of every command.
 */
final class Converters {
  private Converters() {}

  static void register(CommandLine cli) {
    cli.registerConverter(Duration.class, of(Durations::parse));
    cli.registerConverter(Number.class, of(v -> Specs.number(v, "number")));
    cli.registerConverter(FailurePolicies.class, of(FailurePolicies::parse));
  }

  /** {@code parse}, its message kept whole: picocli adds its own to other exceptions. */
  static <T> ITypeConverter<T> of(Function<String, T> parse) {
    return value -> {
      try {
        return parse.apply(value);
      } catch (IllegalArgumentException e) {
        throw new TypeConversionException(e.getMessage());
      }
    };
  }
}
