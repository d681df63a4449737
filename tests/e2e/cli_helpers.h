// Helpers for end-to-end tests: run the real kernelfoundry binary in a scratch directory.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "proc/process.h"

namespace kf::e2e {

struct CliRun {
  int exit_code = -1;
  std::string output;
};

// A scratch directory with its own runs/, cache and database, removed afterwards.
class Scratch {
 public:
  Scratch();
  ~Scratch();
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path db() const { return dir_ / "kernels.sqlite3"; }
  // Config arguments that keep a test's files here and its timing short.
  std::vector<std::string> isolation_args() const;
  // Runs `kernelfoundry args...` with the scratch dir as the working directory.
  CliRun run(const std::vector<std::string>& args, double timeout_s = 300) const;

 private:
  std::filesystem::path dir_;
};

std::filesystem::path source_dir();
std::filesystem::path example(const std::string& name);
std::filesystem::path candidate(const std::string& task, const std::string& file);

}  // namespace kf::e2e
