/*
 * Makes a server's wall clock a test's: loaded into redis-server with LD_PRELOAD, it answers
 * clock_gettime(CLOCK_REALTIME), gettimeofday and time from the file named by
 * TALLY_SERVER_CLOCK, which holds epoch nanoseconds as a decimal and is replaced (written
 * beside it, then renamed) whenever the test moves its clock. So Redis' TIME, as the limiter
 * script reads it, and the clock its keys expire on both follow the test's manual clock.
 * Monotonic clocks stay real, so the server's timers and timeouts run as usual.
 *
 * It makes raw system calls only: a time function may be called before the C library or the
 * allocator is ready (jemalloc asks for the time while it starts), where anything that
 * allocates would recurse. (libfaketime fails there against Debian's redis-server.)
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int test_clock(long long *nanos) {
  const char *path = getenv("TALLY_SERVER_CLOCK");
  if (path == NULL) {
    return 0;
  }
  int fd = (int) syscall(SYS_openat, AT_FDCWD, path, O_RDONLY);
  if (fd < 0) {
    return 0;
  }
  char text[32];
  long n = syscall(SYS_read, fd, text, sizeof text);
  syscall(SYS_close, fd);
  long long v = 0;
  int i = 0;
  while (i < n && text[i] >= '0' && text[i] <= '9') {
    v = v * 10 + (text[i] - '0');
    i++;
  }
  if (i == 0) {
    return 0;
  }
  *nanos = v;
  return 1;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
  long long v;
  if ((id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE) && test_clock(&v)) {
    ts->tv_sec = (time_t) (v / 1000000000LL);
    ts->tv_nsec = (long) (v % 1000000000LL);
    return 0;
  }
  return (int) syscall(SYS_clock_gettime, id, ts);
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
  long long v;
  if (test_clock(&v)) {
    tv->tv_sec = (time_t) (v / 1000000000LL);
    tv->tv_usec = (suseconds_t) ((v % 1000000000LL) / 1000);
    return 0;
  }
  return (int) syscall(SYS_gettimeofday, tv, tz);
}

time_t time(time_t *t) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (t != NULL) {
    *t = ts.tv_sec;
  }
  return ts.tv_sec;
}
