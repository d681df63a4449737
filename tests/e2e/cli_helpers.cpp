// Helpers for end-to-end tests: run the real kernelfoundry binary in a scratch directory.
#include "e2e/cli_helpers.h"

#include <cstdlib>

#include "util/fs.h"

namespace kf::e2e {

std::filesystem::path source_dir() {
  const char* s = std::getenv("KF_SOURCE_DIR");
  return s ? s : KF_E2E_SOURCE_DIR;
}

std::filesystem::path example(const std::string& name) { return source_dir() / "examples" / "tasks" / name; }

std::filesystem::path candidate(const std::string& task, const std::string& file) {
  return source_dir() / "tests" / "e2e" / "candidates" / task / file;
}

Scratch::Scratch() {
  auto d = make_temp_dir(fs::temp_directory_path(), "kf_e2e_");
  dir_ = d.is_ok() ? *d : fs::temp_directory_path() / "kf_e2e_fallback";
}

Scratch::~Scratch() {
  std::error_code ec;
  if (!std::getenv("KF_KEEP_E2E")) fs::remove_all(dir_, ec);
}

std::vector<std::string> Scratch::isolation_args() const {
  return {"paths.logdir=" + (dir_ / "runs").string(),
          "paths.kernels_db_path=" + db().string(),
          "paths.cache_dir=" + (dir_ / "cache").string(),
          "eval_config.time_budget=0.3",
          "eval_config.min_samples=5",
          "eval_config.noise_target=0.05",
          "eval_config.num_seeds=2"};
}

CliRun Scratch::run(const std::vector<std::string>& args, double timeout_s) const {
  // KF_CLI names an installed binary (the GPU machine runs a copied install tree).
  const char* cli = std::getenv("KF_CLI");
  const char* bin_dir = std::getenv("KF_BINARY_DIR");
  ProcessSpec spec;
  spec.argv = {cli ? std::string(cli)
                   : (fs::path(bin_dir ? bin_dir : KF_E2E_BINARY_DIR) / "src" / "cli" / "kernelfoundry").string()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.work_dir = dir_;
  spec.timeout_s = timeout_s;
  PosixProcessRunner runner;
  ProcessResult r = runner.run(spec);
  return {r.timed_out ? -2 : (r.term_signal ? 128 + r.term_signal : r.exit_code), r.output};
}

}  // namespace kf::e2e
