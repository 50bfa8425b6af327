package dev.tally.server;

import dev.tally.server.app.Specs;
import java.time.Duration;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

/** Picocli converters over {@link Specs}, so the CLI reads values exactly as the HTTP API does. */
final class Converters {
  private Converters() {}

  static final class DurationConverter implements ITypeConverter<Duration> {
    @Override
    public Duration convert(String value) {
      try {
        return Specs.duration(value);
      } catch (IllegalArgumentException e) {
        throw new TypeConversionException(e.getMessage());
      }
    }
  }

  static final class NumberConverter implements ITypeConverter<Number> {
    @Override
    public Number convert(String value) {
      try {
        return Specs.number(value, "number");
      } catch (IllegalArgumentException e) {
        throw new TypeConversionException(e.getMessage());
      }
    }
  }
}
