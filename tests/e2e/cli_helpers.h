// Helpers for end-to-end tests: run the real kernelfoundry binary in a scratch directory.
#pragma once

#include <sys/types.h>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "proc/process.h"
#include "store/store.h"

// EXPECT_CONTAINS(text, part): `part` occurs in `text`; on failure both are printed.
#define EXPECT_CONTAINS(haystack, needle)                                                       \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" \
                                                        << (haystack)

namespace kf::e2e {

struct CliRun {
  int exit_code = -1;
  std::string output;
};

// What one job left behind: the CLI's output, runs/<job_name>/results.json and the job's rows in
// the kernel database (kernels in trial/branch order, i.e. the order they were evaluated).
struct JobOutcome {
  CliRun cli;
  std::filesystem::path run_dir;  // runs/<job_name>
  nlohmann::json results;         // null when results.json is missing or not JSON
  std::optional<JobRecord> job;
  std::vector<KernelRecord> kernels;
  std::string db_error;  // why the database could not be read; empty when it could

  // runs/<job_name>/kernels/NNN/<file> as text ("" when missing).
  std::string kernel_file(std::size_t index, const std::string& file) const;
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
  // To follow isolation_args() in tests of a command rather than of timing or integrity: one
  // seed, warm samples (no cache flush per sample), an even shorter budget, no profiling of
  // correct kernels (its own tests turn it on: EvalCpp, the GPU profile tests).
  static std::vector<std::string> quick_args();
  // Runs `kernelfoundry args...` with the scratch dir as the working directory.
  CliRun run(const std::vector<std::string>& args, double timeout_s = 300) const;
  // Runs `kernelfoundry COMMAND isolation_args()... REST...` (args = COMMAND REST...) for the job
  // `job_name` (the task's, or one args set with job_name=) and collects what it wrote.
  JobOutcome run_job(const std::string& job_name, const std::vector<std::string>& args,
                     double timeout_s = 300) const;

 private:
  std::filesystem::path dir_;
};

std::filesystem::path source_dir();
std::filesystem::path example(const std::string& name);
std::filesystem::path candidate(const std::string& task, const std::string& file);

// Checks (with gtest expectations) that a job that evaluated `files` in order recorded each of
// them the same way everywhere: one progress line, one results.json entry and one database row
// per candidate (same uuid, verdict, reason, speedup, code), kernels/NNN/ files, and a job row
// marked done for `task_name`.
void expect_job_recorded(const JobOutcome& job, const std::vector<std::filesystem::path>& files,
                         const std::string& task_name);

// `run task=<example> validate=true` (quick timing): exit 0, verdict 5, one kernel row in
// `language`, consistent with results.json.
void expect_validate_passes(const std::string& example_name, const std::string& job_name,
                            const std::string& language);

// `test <example>` and `test <example> --ref` both pass on the `backend` ("host", "opencl").
void expect_test_command_passes(const std::string& example_name, const std::string& backend);

// Starts `kernelfoundry args...` in the background, in its own process group, with the scratch
// dir as cwd and stdout + stderr going to `log` (a file: fully buffered unless the program flushes
// its lines). KF_BINARY_DIR picks the build. The caller waits for (or kills) the pid.
pid_t spawn_cli(const Scratch& scratch, const std::vector<std::string>& args,
                const std::filesystem::path& log);

// The text of a file, "" when it cannot be read.
std::string file_text(const std::filesystem::path& path);
// Ids of running processes (this one excluded) whose command line contains `text`.
std::vector<int> processes_mentioning(const std::string& text);
// Whether the job's database holds its first page: a test polling a running job opens it only
// then, so the test never creates the file the job is about to create.
bool db_started(const std::filesystem::path& db);
// N in a correct verdict's "..., and N checks of timed calls" (-1 where the reason says none).
int timed_checks(const std::string& reason);

}  // namespace kf::e2e
