// End-to-end fault tests (issue 7): env. Faults of the machine, not of a candidate or the task: a
// kernel database that is empty, not a database or locked; a full disk (a file size limit,
// RLIMIT_FSIZE, set on the whole job or on the candidate's test run only) at the reference's link,
// in a candidate's build and when the harness writes its result; folders that cannot be written;
// a missing compiler. Each is a clear error naming the cause and the path, and no verdict is
// stored for a candidate that could not be evaluated.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "e2e/cli_helpers.h"
#include "util/fs.h"

namespace kf::e2e {
namespace {

#define EXPECT_LACKS(haystack, needle)                                                             \
  EXPECT_EQ((haystack).find(needle), std::string::npos) << "unexpected: " << (needle) << "\nin:\n" \
                                                        << (haystack)

constexpr char kTask[] = "reduction_cpp";

std::string cli_path() {
  const char* cli = std::getenv("KF_CLI");
  const char* bin_dir = std::getenv("KF_BINARY_DIR");
  return cli ? std::string(cli)
             : (fs::path(bin_dir ? bin_dir : KF_E2E_BINARY_DIR) / "src" / "cli" / "kernelfoundry")
                   .string();
}

// Runs `program args...` in `dir` with stdout and stderr captured, optionally under a file size
// limit (soft and hard RLIMIT_FSIZE, as `ulimit -f` sets it) and with extra environment
// variables. Scratch::run cannot do either.
CliRun run_program(const fs::path& dir, const std::vector<std::string>& argv,
                   uint64_t file_size_limit = 0,
                   const std::vector<std::pair<std::string, std::string>>& env = {}) {
  int fds[2];
  if (::pipe(fds) != 0) return {-1, "pipe failed"};
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    ::close(fds[0]);
    ::close(fds[1]);
    if (::chdir(dir.c_str()) != 0) ::_exit(126);
    if (file_size_limit > 0) {
      rlimit limit{file_size_limit, file_size_limit};
      if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) ::_exit(126);
    }
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fds[1]);
  CliRun run;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buffer, sizeof buffer)) != 0) {
    if (n > 0) run.output.append(buffer, static_cast<size_t>(n));
    if (n < 0 && errno != EINTR) break;
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  run.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return run;
}

// `kernelfoundry COMMAND isolation_args() quick_args() REST...` in the scratch dir.
CliRun run_cli(const Scratch& s, const std::vector<std::string>& args, uint64_t file_size_limit = 0,
               const std::vector<std::pair<std::string, std::string>>& env = {}) {
  std::vector<std::string> argv = {cli_path(), args.front()};
  for (const auto& a : s.isolation_args()) argv.push_back(a);
  for (const auto& a : Scratch::quick_args()) argv.push_back(a);
  argv.insert(argv.end(), args.begin() + 1, args.end());
  return run_program(s.dir(), argv, file_size_limit, env);
}

std::vector<std::string> eval_correct_args(const std::string& job_name,
                                           const fs::path& task = example(kTask)) {
  return {"eval", "task=" + task.string(), "job_name=" + job_name,
          candidate(kTask, "correct.cpp").string()};
}

struct StoredJob {
  std::optional<JobRecord> job;
  std::vector<KernelRecord> kernels;
};

StoredJob stored(const Scratch& s, const std::string& job_name) {
  StoredJob out;
  auto store = Store::open(s.db());
  EXPECT_TRUE(store.is_ok()) << store.message();
  if (!store.is_ok()) return out;
  auto job = (*store)->job(job_name);
  auto kernels = (*store)->kernels({.job_name = job_name});
  EXPECT_TRUE(job.is_ok() && kernels.is_ok());
  if (job.is_ok()) out.job = *job;
  if (kernels.is_ok()) out.kernels = *kernels;
  return out;
}

// Builds the task once without limits (`run validate=true`) and returns the size of the largest
// binary in the build cache: a file size limit below it fails the next link, while the small
// files a job writes (database, logs, result files) still fit.
uint64_t prime_and_measure(const Scratch& s) {
  CliRun run =
      run_cli(s, {"run", "task=" + example(kTask).string(), "validate=true", "job_name=prime"});
  EXPECT_EQ(run.exit_code, 0) << run.output;
  uint64_t largest = 0;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(s.dir() / "cache" / "bin", ec))
    if (e.is_regular_file(ec)) largest = std::max<uint64_t>(largest, e.file_size(ec));
  return largest;
}

// The smallest limit that leaves room for what a job writes besides binaries.
constexpr uint64_t kRoomForJobFiles = 1u << 20;  // they take under 100 KB

}  // namespace

TEST(FaultsEnv, EmptyDatabaseFileIsRefusedNotRecreated) {
  Scratch s;
  { std::ofstream create(s.db()); }
  ASSERT_EQ(fs::file_size(s.db()), 0u);
  CliRun run = run_cli(s, {"jobs"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_CONTAINS(run.output, s.db().string());
  EXPECT_CONTAINS(run.output, "exists but is empty (0 bytes)");
  EXPECT_CONTAINS(run.output, "delete it to start a new database");
  // A truncated copy must not silently become an empty database.
  EXPECT_EQ(fs::file_size(s.db()), 0u);
}

TEST(FaultsEnv, FileThatIsNotADatabaseIsNamed) {
  Scratch s;
  std::string garbage;
  for (int i = 0; i < 200; ++i) garbage += "this is a text file, not an SQLite database\n";
  ASSERT_TRUE(write_file(s.db(), garbage).is_ok());
  CliRun run = run_cli(s, {"jobs"});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_CONTAINS(run.output, s.db().string());
  EXPECT_CONTAINS(run.output, "not an SQLite database");
  EXPECT_CONTAINS(run.output, "paths.kernels_db_path");
  EXPECT_EQ(file_text(s.db()), garbage) << "the file was changed";
}

TEST(FaultsEnv, DatabaseLockedByAnotherProcessNamesTheLockAndTheTimeout) {
  Scratch s;
  ASSERT_TRUE(Store::open(s.db()).is_ok());  // an ordinary database (WAL mode)
  // Another process holds the write lock: here this test, through its own SQLite connection.
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(s.db().c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::vector<std::string> args = eval_correct_args("locked");
  args.push_back("database.busy_timeout_ms=200");
  CliRun run = run_cli(s, args);
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_CONTAINS(run.output, s.db().string());
  EXPECT_CONTAINS(run.output, "holds a lock on it");
  EXPECT_CONTAINS(run.output, "database.busy_timeout_ms");
  EXPECT_TRUE(stored(s, "locked").kernels.empty());
}

TEST(FaultsEnv, FullDiskAtTheReferenceLinkIsNotBlamedOnTheTask) {
  uint64_t binary = 0;
  {
    Scratch measure;
    binary = prime_and_measure(measure);
  }
  if (binary / 2 < kRoomForJobFiles)
    GTEST_SKIP() << "the task binary (" << binary << " bytes) is too small to fail its link "
                 << "under a file size limit that still fits the job's other files";
  Scratch s;
  CliRun run = run_cli(s, eval_correct_args("full_at_reference"), binary / 2);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_CONTAINS(run.output, "cannot evaluate the task's reference: environment error");
  EXPECT_CONTAINS(run.output, "link task binary");
  EXPECT_TRUE(run.output.find("File size limit exceeded") != std::string::npos ||
              run.output.find("File too large") != std::string::npos)
      << run.output;
  EXPECT_LACKS(run.output, "failed its own check");
  StoredJob job = stored(s, "full_at_reference");
  ASSERT_TRUE(job.job.has_value()) << run.output;
  EXPECT_EQ(job.job->status, "failed");
  EXPECT_TRUE(job.kernels.empty());
}

TEST(FaultsEnv, FullDiskInACandidatesBuildStopsTheJobWithoutAVerdict) {
  Scratch s;
  uint64_t binary = prime_and_measure(s);  // the reference's binary is now in the cache
  if (binary / 2 < kRoomForJobFiles)
    GTEST_SKIP() << "the task binary (" << binary << " bytes) is too small to fail its link "
                 << "under a file size limit that still fits the job's other files";
  CliRun run = run_cli(s, eval_correct_args("full_mid_job"), binary / 2);
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_CONTAINS(run.output, "reference: building and timing ... ok");  // not blamed
  EXPECT_CONTAINS(run.output, "correct.cpp could not be evaluated: environment error");
  EXPECT_CONTAINS(run.output, "link task binary");
  EXPECT_CONTAINS(run.output, "Nothing was stored for it");
  StoredJob job = stored(s, "full_mid_job");
  ASSERT_TRUE(job.job.has_value()) << run.output;
  EXPECT_EQ(job.job->status, "failed");
  EXPECT_TRUE(job.kernels.empty()) << "a verdict was stored: " << job.kernels.front().verdict << " "
                                   << job.kernels.front().reason;
}

// A candidate's test binary that puts a 1-byte file size limit on itself (except when it runs the
// reference, --ref): the harness cannot write its result file and exits 3 with its "cannot write"
// line. Only a write probe that fails where the child ran makes that the machine's fault (issue
// 8: the candidate must not stop the job by saying so); here the machine can write.
TEST(FaultsEnv, CandidateThatCannotWriteItsResultWhileTheMachineCanIsItsOwnFault) {
  Scratch s;
  fs::path task = s.dir() / "task";
  fs::copy(example(kTask), task, fs::copy_options::recursive);
  ASSERT_TRUE(write_file(task / "zz_disk_full.cpp", R"(// Test only: a full disk for the candidate.
#include <sys/resource.h>
#include <fstream>
#include <iterator>
#include <string>
namespace {
struct DiskFull {
  DiskFull() {
    std::ifstream in("/proc/self/cmdline", std::ios::binary);
    std::string args((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (args.find("--out") == std::string::npos ||
        args.find(std::string("--ref\0", 6)) != std::string::npos)
      return;
    rlimit limit{1, 1};
    setrlimit(RLIMIT_FSIZE, &limit);
  }
} disk_full;
}  // namespace
)")
                  .is_ok());
  CliRun run = run_cli(s, eval_correct_args("harness_cannot_write", task));
  // The candidate's process said it cannot write, but the machine can (a write probe where it
  // ran succeeds): a candidate cannot stop the job by claiming a full disk, so this is the
  // candidate's failure and the job goes on.
  EXPECT_EQ(run.exit_code, 0) << run.output;  // eval: every candidate got a verdict
  EXPECT_CONTAINS(run.output, "reference: building and timing ... ok");
  EXPECT_CONTAINS(run.output, "verdict 2 (runtime error)");
  EXPECT_CONTAINS(run.output, "exit code 3");
  EXPECT_EQ(run.output.find("could not be evaluated: environment error"), std::string::npos)
      << run.output;
  StoredJob job = stored(s, "harness_cannot_write");
  ASSERT_TRUE(job.job.has_value()) << run.output;
  EXPECT_EQ(job.job->status, "done");
}

// The harness itself: a result path that cannot be written is a non-zero exit (3) with the path
// and the errno text on stderr, never exit 0.
TEST(FaultsEnv, HarnessExitsNonZeroWhenItCannotWriteItsResult) {
  Scratch s;
  ASSERT_EQ(prime_and_measure(s) > 0, true);
  fs::path binary;
  // A task binary, not the SHA-256 file the cache keeps beside each one.
  for (const auto& e : fs::directory_iterator(s.dir() / "cache" / "bin"))
    if (e.path().extension() != ".sha256") binary = e.path();
  ASSERT_FALSE(binary.empty());
  fs::path kernel_dir = s.dir() / "runs" / "prime" / "work" / "reference" / "src";
  std::vector<std::string> argv = {binary.string(),     "--phase", "correctness",
                                   "--seeds",           "1",       "--kernel-dir",
                                   kernel_dir.string(), "--ref",   "--out"};
  {
    SCOPED_TRACE("file size limit");
    std::vector<std::string> a = argv;
    a.push_back((s.dir() / "result.json").string());
    CliRun run = run_program(s.dir(), a, 1);
    EXPECT_EQ(run.exit_code, 3) << run.output;
    EXPECT_CONTAINS(run.output,
                    "cannot write the result file " + (s.dir() / "result.json").string());
    EXPECT_CONTAINS(run.output, "File too large");
  }
  {
    SCOPED_TRACE("a folder that does not exist");
    std::vector<std::string> a = argv;
    a.push_back((s.dir() / "no" / "such" / "dir" / "result.json").string());
    CliRun run = run_program(s.dir(), a);
    EXPECT_EQ(run.exit_code, 3) << run.output;
    EXPECT_CONTAINS(run.output, "cannot write the result file " + (s.dir() / "no").string());
    EXPECT_CONTAINS(run.output, "No such file or directory");
  }
}

// Tests run as root, where chmod does not stop a write; /sys is a file system where even root
// cannot create files.
TEST(FaultsEnv, UnwritableFoldersAreNamedBeforeAnyWork) {
  std::error_code ec;
  if (fs::create_directories("/sys/kf_env_probe", ec) || !ec) {
    fs::remove("/sys/kf_env_probe", ec);
    GTEST_SKIP() << "/sys is writable here: no read-only path to test with";
  }
  Scratch s;
  for (const char* key : {"paths.logdir", "paths.cache_dir", "paths.results_dir"}) {
    SCOPED_TRACE(key);
    std::vector<std::string> args = eval_correct_args("unwritable");
    args.push_back(std::string(key) + "=/sys/kf_env_test/" + key);
    CliRun run = run_cli(s, args);
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_CONTAINS(run.output, std::string(key) + " /sys/kf_env_test/" + key + " is not writable");
    EXPECT_CONTAINS(run.output, "Permission denied");
    EXPECT_LACKS(run.output, "reference:");  // found before any work
  }
  {
    SCOPED_TRACE("paths.kernels_db_path");
    std::vector<std::string> args = eval_correct_args("unwritable");
    args.push_back("paths.kernels_db_path=/sys/kf_env_test/kernels.sqlite3");
    CliRun run = run_cli(s, args);
    EXPECT_EQ(run.exit_code, 2) << run.output;
    EXPECT_CONTAINS(run.output,
                    "cannot create the folder of the kernel database "
                    "/sys/kf_env_test/kernels.sqlite3");
    EXPECT_CONTAINS(run.output, "cannot create directory /sys/kf_env_test");
  }
}

TEST(FaultsEnv, MissingCompilerIsNamedNotBlamedOnTheReference) {
  Scratch s;
  CliRun run = run_cli(s, eval_correct_args("no_compiler"), 0,
                       {{"CXX", (s.dir() / "no-such-compiler").string()}});
  EXPECT_EQ(run.exit_code, 2) << run.output;
  EXPECT_CONTAINS(run.output, "the C++ compiler '" + (s.dir() / "no-such-compiler").string() +
                                  "' (from the environment variable CXX) was not found");
  EXPECT_CONTAINS(run.output, "set CXX");
  EXPECT_LACKS(run.output, "failed its own check");
  EXPECT_TRUE(stored(s, "no_compiler").kernels.empty());
}

}  // namespace kf::e2e
