// End-to-end fault tests (issue 7): a task package is data from someone else. Its config cannot
// point the run outside it, its symlinks out of it are refused, a large data file is kept once
// by content hash, and bytes that are not UTF-8 are kept exactly. Each test copies
// examples/tasks/reduction_cpp (host C++) into the scratch folder and changes it.
#include <gtest/gtest.h>

#include <random>

#include "e2e/cli_helpers.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

constexpr char kTask[] = "reduction_cpp";
// Text that must never leave the secret file.
constexpr char kSecretMarker[] = "TOPSECRET_7f3a9c";

// A copy of the example package at <scratch>/<name>.
fs::path copy_package(const Scratch& s, const std::string& name) {
  fs::path dir = s.dir() / name;
  fs::copy(example(kTask), dir, fs::copy_options::recursive);
  return dir;
}

void append(const fs::path& file, const std::string& text) {
  auto old = read_file(file);
  ASSERT_TRUE(old.is_ok()) << old.message();
  ASSERT_TRUE(write_file(file, *old + text).is_ok());
}

// A replay server answering every call from the files of <scratch>/answers.
std::string replay_arg(const Scratch& s, const std::vector<std::string>& answers) {
  for (size_t i = 0; i < answers.size(); ++i)
    EXPECT_TRUE(write_file(s.dir() / "answers" / strprintf("a%02zu.md", i), answers[i]).is_ok());
  return "inference.servers=[{server_type: replay, replay_path: '" +
         (s.dir() / "answers").string() + "'}]";
}

std::string correct_answer() {
  return "Four accumulators per row.\n\n```cpp\n" + file_text(candidate(kTask, "correct.cpp")) +
         "```\n";
}

// Every file under `dir` whose bytes contain `needle`, except `skip`.
std::vector<std::string> files_containing(const fs::path& dir, const std::string& needle,
                                          const fs::path& skip) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_symlink() || !it->is_regular_file() || it->path() == skip) continue;
    auto bytes = read_file(it->path());
    if (bytes.is_ok() && bytes->find(needle) != std::string::npos)
      found.push_back(it->path().string());
  }
  return found;
}

// The task row of the job's task, as JSON (null when missing).
nlohmann::json task_files_json(const Scratch& s, const JobOutcome& job) {
  auto store = Store::open(s.db());
  if (!store.is_ok() || !job.job) return nullptr;
  auto task = (*store)->task(job.job->task_hash);
  if (!task.is_ok() || !task->has_value()) return nullptr;
  return nlohmann::json::parse((*task)->files_json, nullptr, false);
}

const nlohmann::json* file_entry(const nlohmann::json& files, const std::string& path) {
  if (!files.is_array()) return nullptr;
  for (const auto& f : files)
    if (f.value("path", "") == path) return &f;
  return nullptr;
}

// Every package file is in `dir` with the same bytes.
void expect_same_files(const fs::path& package, const fs::path& dir) {
  for (const auto& entry : fs::recursive_directory_iterator(package)) {
    if (!entry.is_regular_file()) continue;
    fs::path rel = entry.path().lexically_relative(package);
    SCOPED_TRACE(rel.string());
    auto want = read_file(entry.path());
    // A candidate's folder holds every file but the reference's (the split judge).
    if (want.is_ok() && want->find("[REFERENCE_START]") != std::string::npos &&
        dir.string().find("kernel-") != std::string::npos)
      continue;
    auto got = read_file(dir / rel);
    ASSERT_TRUE(got.is_ok()) << got.message();
    EXPECT_TRUE(*got == *want) << "bytes differ";
  }
}

}  // namespace

// `kernels_iter_0_path: /abs/secret` in the package's own config.yaml used to be read, stored as
// the starting kernel and sent in the prompt; an output path from the package is refused too.
TEST(FaultsPackage, PackageConfigCannotPointOutsideThePackage) {
  Scratch s;
  const fs::path secret = s.dir() / "secret.cpp";
  ASSERT_TRUE(write_file(secret, std::string("// ") + kSecretMarker + "\n").is_ok());
  fs::path pkg = copy_package(s, "hostile");
  append(pkg / "config.yaml", "kernels_iter_0_path: " + secret.string() + "\n");
  const std::string replay = replay_arg(s, {"No code from me."});
  const std::vector<std::string> args = {"run",          "task=" + pkg.string(),
                                         "max_iters=1",  "branches_per_iteration=1",
                                         "job_name=bad", replay};
  JobOutcome job = s.run_job("bad", args, 120);
  EXPECT_EQ(job.cli.exit_code, 2) << job.cli.output;
  EXPECT_CONTAINS(job.cli.output, "'kernels_iter_0_path' is '" + secret.string() + "' (");
  EXPECT_CONTAINS(job.cli.output, "config.yaml:9)");
  EXPECT_CONTAINS(job.cli.output, "outside the task package");
  EXPECT_CONTAINS(job.cli.output, "set kernels_iter_0_path=" + secret.string() +
                                      " on the command line if you mean it");
  EXPECT_EQ(job.cli.output.find(kSecretMarker), std::string::npos);
  EXPECT_TRUE(job.kernels.empty());
  EXPECT_TRUE(files_containing(s.dir(), kSecretMarker, secret).empty())
      << "the secret was copied: " << join(files_containing(s.dir(), kSecretMarker, secret), ", ");

  // A relative path climbing out of the package is the same thing.
  ASSERT_TRUE(write_file(pkg / "overrides.yaml", "kernels_iter_0_path: ../secret.cpp\n").is_ok());
  JobOutcome relative = s.run_job("bad", args, 120);
  EXPECT_EQ(relative.cli.exit_code, 2) << relative.cli.output;
  EXPECT_CONTAINS(relative.cli.output, "'kernels_iter_0_path' is '../secret.cpp' (");
  EXPECT_CONTAINS(relative.cli.output, "overrides.yaml:1)");

  // Where the run writes: an absolute results_dir from the package is refused before any write.
  const fs::path elsewhere = s.dir() / "elsewhere";
  ASSERT_TRUE(
      write_file(pkg / "overrides.yaml", "paths:\n  results_dir: " + elsewhere.string() + "\n")
          .is_ok());
  std::vector<std::string> validate = {"run", "task=" + pkg.string(), "validate=true",
                                       "job_name=bad_out", "kernels_iter_0_path=null"};
  for (const auto& a : Scratch::quick_args()) validate.push_back(a);
  JobOutcome out = s.run_job("bad_out", validate, 120);
  EXPECT_EQ(out.cli.exit_code, 2) << out.cli.output;
  EXPECT_CONTAINS(out.cli.output, "'paths.results_dir' is '" + elsewhere.string() + "' (");
  EXPECT_CONTAINS(out.cli.output, "may set a relative path without '..' here");
  EXPECT_FALSE(fs::exists(elsewhere));
}

// The same path is the user's choice when it comes from the command line.
TEST(FaultsPackage, TheSamePathOnTheCommandLineIsAccepted) {
  Scratch s;
  const fs::path seed = s.dir() / "my_seed.cpp";
  ASSERT_TRUE(write_file(seed, file_text(candidate(kTask, "correct.cpp"))).is_ok());
  fs::path pkg = copy_package(s, "pkg");
  append(pkg / "config.yaml", "kernels_iter_0_path: /etc/passwd\n");  // overridden below
  std::vector<std::string> args = {"run",
                                   "task=" + pkg.string(),
                                   "job_name=user_seed",
                                   "max_iters=1",
                                   "branches_per_iteration=1",
                                   "kernels_iter_0_path=" + seed.string(),
                                   replay_arg(s, {"No code from me."})};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  JobOutcome job = s.run_job("user_seed", args, 180);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  EXPECT_CONTAINS(job.cli.output, "start: my_seed.cpp");
  ASSERT_FALSE(job.kernels.empty());
  EXPECT_EQ(job.kernels[0].verdict, 5) << job.kernels[0].reason;
  EXPECT_CONTAINS(job.kernels[0].code, "four independent accumulators");
}

// A symlink in a folder package used to be followed: its target went into the database and
// results/. Now the package is refused, naming the link, its target and the fix.
TEST(FaultsPackage, FolderPackageWithASymlinkOutOfItIsRefused) {
  Scratch s;
  const fs::path secret = s.dir() / "secret.txt";
  ASSERT_TRUE(write_file(secret, std::string(kSecretMarker) + "\n").is_ok());
  fs::path pkg = copy_package(s, "linked");
  fs::create_symlink(secret, pkg / "notes.txt");
  std::vector<std::string> args = {"run", "task=" + pkg.string(), "validate=true",
                                   "job_name=linked"};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  JobOutcome job = s.run_job("linked", args, 120);
  EXPECT_EQ(job.cli.exit_code, 2) << job.cli.output;
  EXPECT_CONTAINS(job.cli.output, "symlink 'notes.txt' -> '" + secret.string() + "'");
  EXPECT_CONTAINS(job.cli.output, "points outside the package");
  EXPECT_CONTAINS(job.cli.output, "replace the link with a copy of the file");
  EXPECT_TRUE(job.kernels.empty());
  EXPECT_TRUE(files_containing(s.dir(), kSecretMarker, secret).empty())
      << "the link's target was copied: "
      << join(files_containing(s.dir(), kSecretMarker, secret), ", ");
}

// A large data file used to be copied into every candidate's folder and stored whole in the
// database. Now it is stored once by content hash, linked into each candidate's folder, the task
// row keeps its size and hash, and the results/ package still holds it.
TEST(FaultsPackage, LargeDataFileIsKeptOnceByContentHash) {
  Scratch s;
  fs::path pkg = copy_package(s, "big");
  std::string data(300000, '\0');
  std::mt19937 rng(7);
  for (char& c : data) c = static_cast<char>(rng() & 0xff);
  ASSERT_TRUE(write_file(pkg / "data" / "weights.bin", data).is_ok());
  const std::string sha = sha256_hex(data);

  std::vector<std::string> args = {"run",
                                   "task=" + pkg.string(),
                                   "job_name=big",
                                   "max_iters=1",
                                   "branches_per_iteration=2",
                                   "task_files.large_file_bytes=100000",
                                   "task_files.warn_file_bytes=200000",
                                   replay_arg(s, {correct_answer(), "No code from me."})};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  JobOutcome job = s.run_job("big", args, 240);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  EXPECT_CONTAINS(job.cli.output, "warning: task package " + pkg.string() +
                                      " holds data/weights.bin, 0.3 MiB (over "
                                      "task_files.warn_file_bytes = 200000)");
  ASSERT_GE(job.kernels.size(), 2u);

  // One stored copy; every candidate's folder links to it rather than holding a copy.
  const fs::path stored = s.dir() / "cache" / "files" / sha;
  ASSERT_TRUE(fs::exists(stored));
  EXPECT_EQ(*read_file(stored), data);
  int candidates = 0;
  for (const auto& entry : fs::directory_iterator(job.run_dir / "work")) {
    fs::path copy = entry.path() / "src" / "data" / "weights.bin";
    if (!fs::exists(copy)) continue;
    ++candidates;
    SCOPED_TRACE(copy.string());
    EXPECT_TRUE(fs::equivalent(copy, stored)) << "a copy, not a link to the stored file";
  }
  EXPECT_GE(candidates, 2);

  // The task row keeps path, size and hash, not the bytes.
  nlohmann::json files = task_files_json(s, job);
  ASSERT_TRUE(files.is_array()) << "no task row";
  const nlohmann::json* entry = file_entry(files, "data/weights.bin");
  ASSERT_NE(entry, nullptr) << files.dump();
  EXPECT_EQ(entry->value("sha256", ""), sha);
  EXPECT_EQ(entry->value("bytes", 0), data.size());
  EXPECT_FALSE(entry->contains("content"));
  EXPECT_LT(files.dump().size(), 100000u);

  // The best kernel's package in results/ is complete.
  const fs::path results = s.dir() / "results" / "big" / kTask;
  ASSERT_TRUE(fs::exists(results / "kernelfoundry_best.json")) << job.cli.output;
  EXPECT_EQ(*read_file(results / "data" / "weights.bin"), data);
  EXPECT_CONTAINS(file_text(results / "reduce.cpp"), "[EVOLVE_START]");
}

// Bytes that are not UTF-8 in a kernel comment, a data file and a config.yaml comment used to
// stop the job with "internal error ... invalid UTF-8". Files are bytes: kept exactly.
TEST(FaultsPackage, NonUtf8BytesInPackageFilesAreKeptExactly) {
  Scratch s;
  fs::path pkg = copy_package(s, "bytes");
  auto kernel = read_file(pkg / "reduce.cpp");
  ASSERT_TRUE(kernel.is_ok());
  std::string k = replace_all(*kernel, "// [EVOLVE_START]\n",
                              "// [EVOLVE_START]\n// Latin-1 caf\xe9, a stray \xff\xfe byte\n");
  ASSERT_NE(k, *kernel);
  ASSERT_TRUE(write_file(pkg / "reduce.cpp", "// r\xe9sum\xe9 \x80\n" + k).is_ok());
  ASSERT_TRUE(write_file(pkg / "data" / "raw.dat", "\xc3\x28 not text \x80\xff\n").is_ok());
  auto config = read_file(pkg / "config.yaml");
  ASSERT_TRUE(write_file(pkg / "config.yaml", "# na\xefve comment \xff\n" + *config).is_ok());

  std::vector<std::string> validate = {"run", "task=" + pkg.string(), "validate=true",
                                       "job_name=bytes_validate"};
  for (const auto& a : Scratch::quick_args()) validate.push_back(a);
  JobOutcome v = s.run_job("bytes_validate", validate, 120);
  ASSERT_EQ(v.cli.exit_code, 0) << v.cli.output;
  ASSERT_EQ(v.kernels.size(), 1u);
  EXPECT_EQ(v.kernels[0].verdict, 5) << v.kernels[0].reason;
  // The task row is JSON text: the bad bytes are shown escaped there.
  nlohmann::json files = task_files_json(s, v);
  ASSERT_TRUE(files.is_array());
  const nlohmann::json* row = file_entry(files, "reduce.cpp");
  ASSERT_NE(row, nullptr);
  EXPECT_TRUE(row->value("escaped", false));
  EXPECT_CONTAINS(row->value("content", ""), "a stray \\xff\\xfe byte");
  // The candidate's copy is byte-identical.
  expect_same_files(pkg, v.run_dir / "work" / "kernel-000" / "src");

  // A search whose best is the starting kernel writes the package to results/ byte for byte.
  std::vector<std::string> search = {
      "run",         "task=" + pkg.string(),     "job_name=bytes_search",
      "max_iters=1", "branches_per_iteration=1", replay_arg(s, {"No code from me."})};
  for (const auto& a : Scratch::quick_args()) search.push_back(a);
  JobOutcome job = s.run_job("bytes_search", search, 180);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  expect_same_files(pkg, s.dir() / "results" / "bytes_search" / kTask);

  // A config *value* that is not UTF-8 is an error naming the file and line.
  ASSERT_TRUE(write_file(pkg / "overrides.yaml", "# fine\ntask_name: caf\xe9\n").is_ok());
  JobOutcome bad = s.run_job("bytes_bad", {"run", "task=" + pkg.string(), "validate=true"}, 60);
  EXPECT_EQ(bad.cli.exit_code, 2) << bad.cli.output;
  EXPECT_CONTAINS(bad.cli.output, "the value of 'task_name' is not valid UTF-8 text (");
  EXPECT_CONTAINS(bad.cli.output, "overrides.yaml:2), got 'caf\\xe9'");
}

}  // namespace kf::e2e
