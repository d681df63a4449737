// Helpers for end-to-end tests: run the real kernelfoundry binary in a scratch directory.
#include "e2e/cli_helpers.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "util/fs.h"
#include "util/strings.h"

namespace kf::e2e {

std::filesystem::path source_dir() {
  const char* s = std::getenv("KF_SOURCE_DIR");
  return s ? s : KF_E2E_SOURCE_DIR;
}

std::filesystem::path example(const std::string& name) {
  return source_dir() / "examples" / "tasks" / name;
}

std::filesystem::path candidate(const std::string& task, const std::string& file) {
  return source_dir() / "tests" / "e2e" / "candidates" / task / file;
}

std::string file_text(const std::filesystem::path& path) {
  auto text = read_file(path);
  return text.is_ok() ? *text : std::string();
}

bool db_started(const std::filesystem::path& db) {
  std::error_code ec;
  auto size = fs::file_size(db, ec);
  return !ec && size > 0;
}

int timed_checks(const std::string& reason) {
  const std::string tail = " checks of timed calls";
  std::size_t end = reason.find(tail);
  if (end == std::string::npos) return -1;
  std::size_t begin = reason.find_last_not_of("0123456789", end - 1);
  begin = begin == std::string::npos ? 0 : begin + 1;
  return begin < end ? std::stoi(reason.substr(begin, end - begin)) : -1;
}

std::vector<int> processes_mentioning(const std::string& text) {
  std::vector<int> pids;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    int pid = std::atoi(name.c_str());
    if (pid == getpid()) continue;
    std::string cmdline = file_text(entry.path() / "cmdline");  // arguments separated by NULs
    if (cmdline.find(text) != std::string::npos) pids.push_back(pid);
  }
  return pids;
}

std::string JobOutcome::kernel_file(std::size_t index, const std::string& file) const {
  char dir[16];
  std::snprintf(dir, sizeof dir, "%03zu", index);
  return file_text(run_dir / "kernels" / dir / file);
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

std::vector<std::string> Scratch::quick_args() {
  return {"eval_config.num_seeds=1", "eval_config.cold_samples=false",
          "eval_config.time_budget=0.1", "eval_config.hidden_shapes=false",
          "eval_config.profile_custom_model=false"};
}

CliRun Scratch::run(const std::vector<std::string>& args, double timeout_s) const {
  // KF_CLI names an installed binary (the GPU machine runs a copied install tree).
  const char* cli = std::getenv("KF_CLI");
  const char* bin_dir = std::getenv("KF_BINARY_DIR");
  ProcessSpec spec;
  spec.argv = {
      cli ? std::string(cli)
          : (fs::path(bin_dir ? bin_dir : KF_E2E_BINARY_DIR) / "src" / "cli" / "kernelfoundry")
                .string()};
  spec.argv.insert(spec.argv.end(), args.begin(), args.end());
  spec.work_dir = dir_;
  spec.timeout_s = timeout_s;
  PosixProcessRunner runner;
  ProcessResult r = runner.run(spec);
  return {r.timed_out ? -2 : (r.term_signal ? 128 + r.term_signal : r.exit_code), r.output};
}

JobOutcome Scratch::run_job(const std::string& job_name, const std::vector<std::string>& args,
                            double timeout_s) const {
  // The command, then isolation_args(), then the rest: a later value of a key wins, so args may
  // override the isolation settings.
  std::vector<std::string> all(args.begin(), args.begin() + (args.empty() ? 0 : 1));
  for (const auto& a : isolation_args()) all.push_back(a);
  all.insert(all.end(), args.begin() + (args.empty() ? 0 : 1), args.end());
  JobOutcome out;
  out.cli = run(all, timeout_s);
  out.run_dir = dir_ / "runs" / job_name;
  std::string results = file_text(out.run_dir / "results.json");
  out.results = nlohmann::json::parse(results, nullptr, /*allow_exceptions=*/false);
  if (out.results.is_discarded()) out.results = nullptr;
  auto store = Store::open(db());
  if (!store.is_ok()) {
    out.db_error = store.message();
    return out;
  }
  auto job = (*store)->job(job_name);
  auto kernels = (*store)->kernels({.job_name = job_name, .order = KernelOrder::kTrialOrder});
  if (!job.is_ok() || !kernels.is_ok()) {
    out.db_error = job.is_ok() ? kernels.message() : job.message();
    return out;
  }
  out.job = *job;
  out.kernels = std::move(*kernels);
  return out;
}

void expect_job_recorded(const JobOutcome& job, const std::vector<std::filesystem::path>& files,
                         const std::string& task_name) {
  ASSERT_TRUE(job.db_error.empty()) << job.db_error;
  ASSERT_TRUE(job.job.has_value()) << "no job row\n" << job.cli.output;
  EXPECT_EQ(job.job->status, "done");
  EXPECT_EQ(job.job->task_name, task_name);
  auto progress = nlohmann::json::parse(job.job->progress_json, nullptr, false);
  EXPECT_EQ(progress.value("evaluated", -1), static_cast<int>(files.size()))
      << job.job->progress_json;

  ASSERT_TRUE(job.results.is_object()) << "no results.json in " << job.run_dir;
  EXPECT_EQ(job.results.value("task_name", ""), task_name);
  EXPECT_EQ(job.results.value("job_name", ""), job.job->job_name);
  EXPECT_FALSE(job.results["reference"].empty()) << "results.json has no reference timings";
  const nlohmann::json& entries = job.results["kernels"];
  ASSERT_EQ(entries.size(), files.size()) << job.cli.output;
  ASSERT_EQ(job.kernels.size(), files.size()) << job.cli.output;

  std::size_t pos = 0;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const KernelRecord& k = job.kernels[i];
    const nlohmann::json& e = entries[i];
    std::string label = files[i].filename().string();
    SCOPED_TRACE("candidate " + std::to_string(i) + " " + label);
    EXPECT_EQ(k.branch, static_cast<int>(i));
    EXPECT_EQ(k.task_name, task_name);
    EXPECT_EQ(e.value("label", ""), label);
    EXPECT_EQ(e.value("uuid", ""), k.uuid);
    EXPECT_EQ(e.value("verdict", -1), k.verdict);
    EXPECT_EQ(e.value("reason", ""), k.reason);
    EXPECT_FALSE(k.reason.empty());
    if (k.speedup) {
      EXPECT_EQ(k.verdict, 5) << "only a correct kernel has a speedup";
      ASSERT_TRUE(e["speedup"].is_number());
      EXPECT_DOUBLE_EQ(e["speedup"].get<double>(), *k.speedup);
    } else {
      EXPECT_TRUE(e["speedup"].is_null());
    }
    std::string code = file_text(files[i]);
    EXPECT_EQ(k.code, code);
    EXPECT_EQ(job.kernel_file(i, "code.txt"), code);
    EXPECT_EQ(job.kernel_file(i, "eval_log.txt"), k.eval_log);
    EXPECT_TRUE(starts_with(k.eval_log, "verdict: " + std::to_string(k.verdict) + " "))
        << k.eval_log;

    // The progress lines come in order: "[i/n] label ... verdict V (name)".
    std::string head =
        "[" + std::to_string(i + 1) + "/" + std::to_string(files.size()) + "] " + label;
    std::size_t at = job.cli.output.find(head, pos);
    ASSERT_NE(at, std::string::npos) << "missing progress line " << head << "\n" << job.cli.output;
    std::size_t eol = job.cli.output.find('\n', at);
    std::string line = job.cli.output.substr(at, eol == std::string::npos ? eol : eol - at);
    EXPECT_NE(line.find("verdict " + std::to_string(k.verdict) + " ("), std::string::npos) << line;
    pos = at + head.size();
  }
}

void expect_validate_passes(const std::string& example_name, const std::string& job_name,
                            const std::string& language) {
  Scratch s;
  std::vector<std::string> args = {"run", "task=" + example(example_name).string(),
                                   "validate=true"};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  JobOutcome job = s.run_job(job_name, args);
  EXPECT_EQ(job.cli.exit_code, 0) << job.cli.output;
  EXPECT_NE(job.cli.output.find("[1/1] EVOLVE block as written"), std::string::npos)
      << job.cli.output;
  EXPECT_NE(job.cli.output.find("verdict 5 (correct)"), std::string::npos) << job.cli.output;
  ASSERT_TRUE(job.db_error.empty()) << job.db_error;
  ASSERT_TRUE(job.job.has_value());
  EXPECT_EQ(job.job->status, "done");
  EXPECT_EQ(job.job->language, language);
  ASSERT_EQ(job.kernels.size(), 1u);
  EXPECT_EQ(job.kernels[0].verdict, 5) << job.kernels[0].reason;
  EXPECT_TRUE(job.kernels[0].speedup.has_value());
  ASSERT_TRUE(job.results.is_object());
  ASSERT_EQ(job.results["kernels"].size(), 1u);
  EXPECT_EQ(job.results["kernels"][0].value("uuid", ""), job.kernels[0].uuid);
}

void expect_test_command_passes(const std::string& example_name, const std::string& backend) {
  Scratch s;
  std::vector<std::string> args = {"test", example(example_name).string()};
  for (const auto& a : s.isolation_args()) args.push_back(a);
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  for (const char* impl : {"candidate", "reference"}) {
    SCOPED_TRACE(impl);
    if (std::string(impl) == "reference") args.push_back("--ref");
    CliRun r = s.run(args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    for (const std::string& part :
         {std::string("verdict: 5 (correct)"), std::string(impl) + " on " + backend + " device",
          std::string("result: pass")})
      EXPECT_NE(r.output.find(part), std::string::npos) << "missing: " << part << "\nin:\n"
                                                        << r.output;
  }
}

pid_t spawn_cli(const Scratch& scratch, const std::vector<std::string>& args,
                const std::filesystem::path& log) {
  const char* bin_dir = std::getenv("KF_BINARY_DIR");
  std::string cli = (std::filesystem::path(bin_dir ? bin_dir : KF_E2E_BINARY_DIR) / "src" / "cli" /
                     "kernelfoundry")
                        .string();
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    if (chdir(scratch.dir().c_str()) != 0) _exit(127);
    FILE* out = std::freopen(log.c_str(), "w", stdout);
    if (out) dup2(fileno(stdout), 2);
    std::vector<char*> argv = {const_cast<char*>(cli.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

}  // namespace kf::e2e
