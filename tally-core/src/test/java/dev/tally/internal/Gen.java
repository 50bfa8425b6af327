package dev.tally.internal;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * A generator of random test values for the property tests ({@link Property}): a function of a
 * random source, with the few combinators the limiter timelines need.
 *
 * <p>Why numbers are not drawn uniformly: a uniform long in {@code [1, 2^63)} is almost always
 * about 2^62, so the values that break arithmetic (0, 1, the ends of the range, small counts
 * next to huge ones) would almost never come up. {@link #longs(long, long)} therefore draws one
 * time in eight from the edges of its range, and otherwise half the time uniformly and half the
 * time with a uniformly chosen number of bits, so every order of magnitude in the range is as
 * likely as the next.
 */
@FunctionalInterface
interface Gen<T> {
  T next(SplittableRandom random);

  default <U> Gen<U> map(Function<? super T, ? extends U> f) {
    return r -> f.apply(next(r));
  }

  default <U> Gen<U> flatMap(Function<? super T, ? extends Gen<? extends U>> f) {
    return r -> f.apply(next(r)).next(r);
  }

  /** Values that pass {@code p}; fails loudly if the generator almost never makes one. */
  default Gen<T> filter(Predicate<? super T> p) {
    return r -> {
      for (int i = 0; i < 10_000; i++) {
        T v = next(r);
        if (p.test(v)) {
          return v;
        }
      }
      throw new IllegalStateException("filter rejected 10,000 values in a row");
    };
  }

  /** Lists of {@code min} to {@code max} values, every length equally likely. */
  default Gen<List<T>> list(int min, int max) {
    return r -> {
      int n = min + r.nextInt(max - min + 1);
      List<T> list = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        list.add(next(r));
      }
      return list;
    };
  }

  /** Any long. */
  static Gen<Long> longs() {
    return longs(Long.MIN_VALUE, Long.MAX_VALUE);
  }

  /** Longs in {@code [min, max]}: edges, every magnitude, and uniform (see the class comment). */
  static Gen<Long> longs(long min, long max) {
    if (min > max) {
      throw new IllegalArgumentException("empty range [" + min + ", " + max + "]");
    }
    long[] edges = Arrays.stream(new long[] {min, min + 1, max - 1, max, -1, 0, 1})
        .filter(v -> v >= min && v <= max).distinct().toArray();
    return r -> {
      int pick = r.nextInt(16);
      if (pick < 2) {
        return edges[r.nextInt(edges.length)];
      }
      if (pick < 9) {
        return uniform(r, min, max);
      }
      return magnitude(r, min, max);
    };
  }

  /** Longs in {@code [min, max]} with every number of bits equally likely: mostly small ones. */
  static Gen<Long> biased(long min, long max) {
    return r -> magnitude(r, min, max);
  }

  static Gen<Integer> ints(int min, int max) {
    return longs(min, max).map(Long::intValue);
  }

  @SafeVarargs
  static <T> Gen<T> of(T... values) {
    List<T> list = new ArrayList<>(values.length);
    for (T v : values) {
      list.add(v);
    }
    return of(list);
  }

  static <T> Gen<T> of(List<T> values) {
    List<T> copy = List.copyOf(values);
    return r -> copy.get(r.nextInt(copy.size()));
  }

  static <E extends Enum<E>> Gen<E> of(Class<E> type) {
    return of(type.getEnumConstants());
  }

  static <T> Gen<T> just(T value) {
    return r -> value;
  }

  /** One of {@code gens}, each equally likely. */
  @SafeVarargs
  static <T> Gen<T> oneOf(Gen<? extends T>... gens) {
    List<Gen<? extends T>> list = new ArrayList<>(gens.length);
    for (Gen<? extends T> g : gens) {
      list.add(g);
    }
    List<Gen<? extends T>> copy = List.copyOf(list);
    return r -> copy.get(r.nextInt(copy.size())).next(r);
  }

  /** A generator and how often it is chosen, relative to the others of {@link #frequencyOf}. */
  record Weighted<T>(int weight, Gen<? extends T> gen) {}

  static <T> Weighted<T> w(int weight, Gen<? extends T> gen) {
    return new Weighted<>(weight, gen);
  }

  /** One of the weighted generators, each chosen in proportion to its weight. */
  @SafeVarargs
  static <T> Gen<T> frequencyOf(Weighted<? extends T>... choices) {
    List<Weighted<? extends T>> list = new ArrayList<>(choices.length);
    for (Weighted<? extends T> c : choices) {
      list.add(c);
    }
    return frequencyOf(list);
  }

  static <T> Gen<T> frequencyOf(List<? extends Weighted<? extends T>> choices) {
    List<Weighted<? extends T>> copy = List.copyOf(choices);
    int total = copy.stream().mapToInt(Weighted::weight).sum();
    return r -> {
      int x = r.nextInt(total);
      for (Weighted<? extends T> c : copy) {
        x -= c.weight();
        if (x < 0) {
          return c.gen().next(r);
        }
      }
      throw new AssertionError(x);
    };
  }

  private static long uniform(SplittableRandom r, long min, long max) {
    if (max < Long.MAX_VALUE) {
      return r.nextLong(min, max + 1);
    }
    return min > Long.MIN_VALUE ? r.nextLong(min - 1, max) + 1 : r.nextLong();
  }

  /** {@code min} plus (or, for a range below zero, {@code max} minus) a k-bit offset, k uniform. */
  private static long magnitude(SplittableRandom r, long min, long max) {
    long width = max - min; // as unsigned
    int bits = 64 - Long.numberOfLeadingZeros(width);
    int k = r.nextInt(bits + 1);
    long offset = k == 0 ? 0 : (r.nextLong() >>> (64 - k));
    if (Long.compareUnsigned(offset, width) > 0) {
      offset = Long.remainderUnsigned(offset, width) + 1;
    }
    if (min < 0 && max <= 0) {
      return max - offset;
    }
    if (min < 0) { // straddles zero: small magnitudes on either side
      long v = r.nextBoolean() ? offset : -offset;
      return v >= min && v <= max ? v : uniform(r, min, max);
    }
    return min + offset;
  }
}
