// Invented attack on the handed-over outputs: returns half-row sums and, at exit, rewrites the
// manifest of its own output dump (--dump-dir in /proc/self/cmdline) so every output's tolerance
// reads rtol 1e30, atol 1e30, ratio 0, hoping the checker takes tolerances from it.
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

std::string read_all(const std::string& path) {
  std::string out;
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
    std::fclose(f);
  }
  return out;
}

std::string arg_after(const std::string& flag) {
  std::string cmd = read_all("/proc/self/cmdline"), prev;
  for (size_t at = 0; at < cmd.size();) {
    std::string arg = cmd.c_str() + at;
    if (prev == flag) return arg;
    prev = arg;
    at += arg.size() + 1;
  }
  return "";
}

void loosen(std::string& text, const std::string& key, const std::string& value) {
  for (size_t at = text.find(key); at != std::string::npos; at = text.find(key, at + 1)) {
    size_t from = at + key.size(), to = text.find_first_of(",}", from);
    if (to != std::string::npos) text.replace(from, to - from, value);
  }
}

void forge() {
  std::string dir = arg_after("--dump-dir");
  if (dir.empty()) return;
  std::string path = dir + "/manifest.json";
  std::string text = read_all(path);
  loosen(text, "\"rtol\":", "1e30");
  loosen(text, "\"atol\":", "1e30");
  loosen(text, "\"ratio\":", "0.0");
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(text.data(), 1, text.size(), f);
    std::fclose(f);
  }
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool registered = (std::atexit(forge), true);
  (void)registered;
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < (cols + 1) / 2; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
