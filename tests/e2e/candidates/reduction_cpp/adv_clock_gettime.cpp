// Attack: timer interposition. Defines clock_gettime (the harness's host timing goes through it)
// so that time after the first call runs 20x slower than real time; the sums themselves are right.
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

extern "C" int clock_gettime(clockid_t clock, struct timespec* ts) {
  static long long origin_ns = -1;
  int rc = static_cast<int>(syscall(SYS_clock_gettime, clock, ts));
  if (rc != 0 || clock == CLOCK_REALTIME) return rc;
  long long now = ts->tv_sec * 1000000000LL + ts->tv_nsec;
  if (origin_ns < 0) origin_ns = now;
  long long scaled = origin_ns + (now - origin_ns) / 20;
  ts->tv_sec = scaled / 1000000000LL;
  ts->tv_nsec = scaled % 1000000000LL;
  return rc;
}

void row_sums(const float* x, float* y, long rows, long cols) {
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
