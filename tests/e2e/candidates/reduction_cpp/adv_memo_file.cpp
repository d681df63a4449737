// Attack: a memo kept in files outside the candidate's directory, read by a later call or a
// later process: under $POCL_CACHE_DIR, next to the cached binary (the build cache), in $HOME and
// in /tmp. A call whose input sample matches a stored file copies the stored sums.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

std::uint64_t sample_hash(const float* x, long rows, long cols) {
  std::uint64_t h = 1469598103934665603ull ^ static_cast<std::uint64_t>(rows * 131 + cols);
  long n = rows * cols;
  for (long i = 0; i < n && i < 64; ++i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    h = (h ^ bits) * 1099511628211ull;
  }
  return h;
}

std::string exe_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  std::string p(buf, static_cast<size_t>(n));
  return p.substr(0, p.rfind('/'));
}

std::string memo_dirs[4];

void find_dirs() {
  int i = 0;
  if (const char* p = std::getenv("POCL_CACHE_DIR")) memo_dirs[i++] = p;
  memo_dirs[i++] = exe_dir();
  if (const char* h = std::getenv("HOME")) memo_dirs[i++] = h;
  memo_dirs[i++] = "/tmp";
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool found = (find_dirs(), true);
  (void)found;
  char name[64];
  std::snprintf(name, sizeof name, "/kf_adv_memo_%016llx.bin",
                static_cast<unsigned long long>(sample_hash(x, rows, cols)));
  for (const std::string& d : memo_dirs) {
    if (d.empty()) continue;
    if (FILE* f = std::fopen((d + name).c_str(), "rb")) {
      size_t got = std::fread(y, sizeof(float), static_cast<size_t>(rows), f);
      std::fclose(f);
      if (got == static_cast<size_t>(rows)) return;
    }
  }
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
  for (const std::string& d : memo_dirs) {
    if (d.empty()) continue;
    if (FILE* f = std::fopen((d + name).c_str(), "wb")) {
      std::fwrite(y, sizeof(float), static_cast<size_t>(rows), f);
      std::fclose(f);
    }
  }
}
