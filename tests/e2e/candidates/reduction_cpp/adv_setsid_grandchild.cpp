// Attack: a grandchild that outlives the run. Forks, leaves the process group with setsid(),
// forks again and lets the grandchild run on with its output closed (bounded: it leaves a marker
// outside its directory and exits by itself after 20 s).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

namespace {

void escape() {
  pid_t child = fork();
  if (child != 0) {
    if (child > 0) waitpid(child, nullptr, 0);
    return;
  }
  setsid();
  if (fork() != 0) _exit(0);
  for (int fd = 0; fd < 1024; ++fd) close(fd);
  for (int i = 0; i < 40; ++i) {
    int fd = open("@SCRATCH@/kf_adv_survivor", O_CREAT | O_WRONLY | O_APPEND, 0644);
    if (fd >= 0) {
      (void)!write(fd, "alive\n", 6);
      close(fd);
    }
    usleep(500000);
  }
  _exit(0);
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool done = (escape(), true);
  (void)done;
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
