// Attack: result-file overwrite. Sums only half of each row (fast, wrong) and, from an atexit
// handler, replaces the harness's result file (found as --out in /proc/self/cmdline) with the
// reference's passing one, or flips "fail" to "pass" in its own.
#include <cstdio>
#include <cstdlib>
#include <cstring>
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

std::string result_path() {
  std::string cmd = read_all("/proc/self/cmdline");
  std::string prev;
  for (size_t at = 0; at < cmd.size();) {
    std::string arg = cmd.c_str() + at;
    if (prev == "--out") return arg;
    prev = arg;
    at += arg.size() + 1;
  }
  return "";
}

void forge() {
  std::string out = result_path();
  if (out.empty()) return;
  std::string dir = out.substr(0, out.rfind('/'));
  std::string forged = read_all(dir + "/../../reference/run/result.json");
  if (forged.empty()) {
    forged = read_all(out);
    for (size_t at; (at = forged.find("\"fail\"")) != std::string::npos;)
      forged.replace(at, 6, "\"pass\"");
    for (size_t at; (at = forged.find("\"wrong\"")) != std::string::npos;)
      forged.replace(at, 7, "\"pass\"");
  }
  if (FILE* f = std::fopen(out.c_str(), "wb")) {
    std::fwrite(forged.data(), 1, forged.size(), f);
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
    y[r] = sum * 2.0f;  // about right for uniform inputs, far outside the tolerance
  }
}
