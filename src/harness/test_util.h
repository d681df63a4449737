// Test helpers: run kf::main in-process on a problem and read back its result JSON.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernelfoundry/harness.h"

namespace kernelfoundry::testing {

struct RunResult {
  int exit_code = -1;
  nlohmann::json json;  // the --out file
  std::string stdout_text;
};

// A fresh temporary folder (removed by the OS's tmp cleaning; tests are small).
std::string make_temp_dir();
void write_text(const std::string& path, const std::string& text);

// Runs kf::main with `args` (without argv[0]) plus --out into a temp file; fast timing defaults
// (tiny budget, few samples, warm) unless `args` overrides them.
RunResult run_main(Problem& problem, const Suite& suite, std::vector<std::string> args);

// Options that keep a benchmark phase short in tests.
std::vector<std::string> quick_benchmark_args();

}  // namespace kernelfoundry::testing
