// Test helpers for the harness integration tests.
#include "harness/test_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <fstream>
#include <sstream>

namespace kernelfoundry::testing {

std::string make_temp_dir() {
  std::string pattern = "/tmp/kf_harness_test_XXXXXX";
  char* dir = mkdtemp(pattern.data());
  if (dir == nullptr) throw std::runtime_error("mkdtemp failed");
  return dir;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

std::vector<std::string> quick_benchmark_args() {
  return {"--time-budget", "0.02", "--min-samples",  "3", "--max-samples", "20",
          "--warmup-time", "0",    "--warmup-iters", "1", "--warm"};
}

RunResult run_main(Problem& problem, const Suite& suite, std::vector<std::string> args) {
  std::string out = make_temp_dir() + "/result.json";
  std::vector<std::string> full = {"task_bin", "--out", out};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);

  RunResult r;
  ::testing::internal::CaptureStdout();
  r.exit_code = kernelfoundry::main(int(full.size()), argv.data(), problem, suite);
  r.stdout_text = ::testing::internal::GetCapturedStdout();
  std::ifstream in(out);
  if (in) {
    std::stringstream s;
    s << in.rdbuf();
    r.json = nlohmann::json::parse(s.str(), nullptr, false);
  }
  return r;
}

}  // namespace kernelfoundry::testing
