// The task record a job stores: file contents as JSON text (bytes that are not UTF-8 escaped),
// large data files as path, size and hash; and paths a package's config sets for iteration 0.
#include "search/job.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "search/seed_kernel.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kf {
namespace {

class JobTaskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_job_test_");
    ASSERT_TRUE(dir.is_ok());
    dir_ = fs::canonical(*dir);
    const char* src = std::getenv("KF_SOURCE_DIR");
    pkg_ = dir_ / "pkg";
    fs::copy(fs::path(src ? src : ".") / "examples" / "tasks" / "softmax_ocl", pkg_,
             fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<JobContext> job(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"task=" + pkg_.string(),
                                     "paths.logdir=" + (dir_ / "runs").string(),
                                     "paths.cache_dir=" + (dir_ / "cache").string(),
                                     "paths.kernels_db_path=" + (dir_ / "k.sqlite3").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return open_job(args);
  }

  fs::path dir_, pkg_;
};

TEST_F(JobTaskTest, TaskRecordEscapesBadBytesAndKeepsLargeFilesByHash) {
  const std::string big(5000, '\x01');
  ASSERT_TRUE(write_file(pkg_ / "data" / "big.bin", big).is_ok());
  ASSERT_TRUE(write_file(pkg_ / "notes.txt", "caf\xe9 \xff\n").is_ok());
  auto ctx = job({"task_files.large_file_bytes=1000"});
  ASSERT_TRUE(ctx.is_ok()) << ctx.message();
  TaskRecord record = task_record(*ctx);
  auto files = nlohmann::json::parse(record.files_json);  // valid JSON text
  bool saw_big = false, saw_notes = false;
  for (const auto& f : files) {
    if (f["path"] == "data/big.bin") {
      saw_big = true;
      EXPECT_EQ(f.value("sha256", ""), sha256_hex(big));
      EXPECT_EQ(f.value("bytes", 0u), big.size());
      EXPECT_FALSE(f.contains("content"));
    }
    if (f["path"] == "notes.txt") {
      saw_notes = true;
      EXPECT_EQ(f.value("content", ""), "caf\\xe9 \\xff\n");
      EXPECT_TRUE(f.value("escaped", false));
    }
  }
  EXPECT_TRUE(saw_big && saw_notes) << record.files_json;
  EXPECT_TRUE(fs::exists(dir_ / "cache" / "files" / sha256_hex(big)));
}

TEST_F(JobTaskTest, PackageSeedPathIsTakenFromInsideThePackage) {
  const std::string seed = "__kernel void softmax_seed_from_package() {}\n";
  ASSERT_TRUE(write_file(pkg_ / "seeds" / "start.cl", seed).is_ok());
  ASSERT_TRUE(write_file(pkg_ / "overrides.yaml", "kernels_iter_0_path: seeds/start.cl\n").is_ok());
  auto ctx = job();
  ASSERT_TRUE(ctx.is_ok()) << ctx.message();
  auto resolved = resolve_seed_kernel(*ctx);
  ASSERT_TRUE(resolved.is_ok()) << resolved.message();
  ASSERT_EQ(resolved->codes.size(), 1u);
  EXPECT_EQ(resolved->codes[0], seed);

  ASSERT_TRUE(write_file(dir_ / "secret.cl", "secret\n").is_ok());
  ASSERT_TRUE(write_file(pkg_ / "overrides.yaml", "kernels_iter_0_path: ../secret.cl\n").is_ok());
  auto refused = job();
  ASSERT_FALSE(refused.is_ok());
  EXPECT_NE(refused.message().find("'kernels_iter_0_path' is '../secret.cl'"), std::string::npos)
      << refused.message();
  // From the command line it is the user's choice (relative to the working directory).
  auto chosen = job({"kernels_iter_0_path=" + (dir_ / "secret.cl").string()});
  ASSERT_TRUE(chosen.is_ok()) << chosen.message();
}

// A correct candidate with speedup `s` and, when batches > 0, a side-by-side interval.
EvalResult measured(double s, double lo = 0, double hi = 0, int batches = 0) {
  EvalResult r;
  r.verdict = kCorrect;
  r.speedup = s;
  if (batches > 0) r.speedup_interval = SpeedupInterval{s, lo, hi, 0.95, batches};
  return r;
}

TEST(JobBestTest, NewBestOnlyWhenTheIntervalSaysFaster) {
  const std::optional<SpeedupInterval> best = SpeedupInterval{1.25, 1.24, 1.26, 0.95, 12};
  // Higher point estimate, but inside the noise: the best stays.
  EXPECT_FALSE(beats_best(measured(1.27, 1.15, 1.40, 12), 1.25, best));
  EXPECT_FALSE(beats_best(measured(1.25, 1.24, 1.26, 12), 1.25, best));  // equal
  EXPECT_TRUE(beats_best(measured(1.35, 1.33, 1.37, 12), 1.25, best));
  // Either side without an interval: the point estimates, as before.
  EXPECT_TRUE(beats_best(measured(1.26), 1.25, best));
  EXPECT_TRUE(beats_best(measured(1.26, 1.0, 1.6, 12), 1.25, std::nullopt));
  EXPECT_FALSE(beats_best(measured(1.25), 1.25, std::nullopt));  // a tie keeps the best
  // The first correct kernel is the best; wrong, unmeasured or suspect ones never are.
  EXPECT_TRUE(beats_best(measured(0.5, 0.49, 0.51, 12), std::nullopt, std::nullopt));
  EvalResult wrong = measured(2.0, 1.9, 2.1, 12);
  wrong.verdict = kWrongValues;
  EXPECT_FALSE(beats_best(wrong, 1.25, best));
  EvalResult unmeasured = measured(1.0);
  unmeasured.speedup.reset();
  EXPECT_FALSE(beats_best(unmeasured, std::nullopt, std::nullopt));
  EvalResult flagged = measured(5.0, 4.9, 5.1, 12);
  flagged.flags.push_back({{"flag", "implausible_speedup"}, {"detail", ""}, {"suspect", true}});
  EXPECT_FALSE(beats_best(flagged, 1.25, best));
}

TEST(JobBestTest, SpeedupTextAndStoredIntervalRoundTrip) {
  SpeedupInterval s{1.234, 1.2, 1.26, 0.95, 8};
  EXPECT_EQ(speedup_text(1.234, s), "1.234x [1.20-1.26]");
  EXPECT_EQ(speedup_text(1.234, std::nullopt), "1.234x");
  EXPECT_EQ(speedup_text(std::nullopt, s), "-");
  KernelRecord k;
  k.speedup = 1.234;
  k.speedup_interval = stored_interval(s);
  std::optional<SpeedupInterval> back = speedup_interval_of(k);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->speedup, 1.234);
  EXPECT_EQ(back->lo, 1.2);
  EXPECT_EQ(back->hi, 1.26);
  EXPECT_EQ(back->batches, 8);
  k.speedup_interval.reset();
  EXPECT_FALSE(speedup_interval_of(k).has_value());
}

}  // namespace
}  // namespace kf
