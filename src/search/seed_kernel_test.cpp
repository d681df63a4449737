// Where iteration 0 starts: the EVOLVE block, start_from_best, and each form of
// kernels_iter_0_path, on the softmax_ocl example with a scratch database.
#include "search/seed_kernel.h"

#include <gtest/gtest.h>

#include <cstdlib>

#include "util/fs.h"

namespace kf {
namespace {

fs::path example_dir() {
  const char* src = std::getenv("KF_SOURCE_DIR");
  return fs::path(src ? src : ".") / "examples" / "tasks" / "softmax_ocl";
}

class SeedKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_seed_test_");
    ASSERT_TRUE(dir.is_ok());
    dir_ = *dir;
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result<JobContext> job(std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"task=" + example_dir().string(),
                                     "paths.logdir=" + (dir_ / "runs").string(),
                                     "paths.kernels_db_path=" + (dir_ / "k.sqlite3").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    return open_job(args);
  }

  // A stored kernel of `job_name` for the example's task, arch and language.
  std::string store_kernel(JobContext& ctx, const std::string& job_name, int verdict,
                           double speedup, const std::string& code) {
    JobRecord j;
    j.job_name = job_name;
    EXPECT_TRUE(ctx.store->put_job(j).is_ok());
    KernelRecord k;
    k.uuid = new_uuid();
    k.job_name = job_name;
    k.task_name = ctx.task_name;
    k.gpu_arch = ctx.gpu_arch;
    k.language = std::string(language_name(ctx.language));
    k.verdict = verdict;
    k.speedup = speedup;
    k.code = code;
    EXPECT_TRUE(ctx.store->put_kernel(k).is_ok());
    return k.uuid;
  }

  fs::path dir_;
};

TEST_F(SeedKernelTest, DefaultIsTheEvolveBlockAsWritten) {
  auto ctx = job();
  ASSERT_TRUE(ctx.is_ok()) << ctx.message();
  auto seed = resolve_seed_kernel(*ctx);
  ASSERT_TRUE(seed.is_ok()) << seed.message();
  EXPECT_TRUE(seed->codes.empty());
  EXPECT_EQ(seed->label, "EVOLVE block as written");
}

TEST_F(SeedKernelTest, StartFromBestTakesTheFastestCorrectStoredKernel) {
  auto ctx = job({"start_from_best=true"});
  ASSERT_TRUE(ctx.is_ok()) << ctx.message();
  auto empty = resolve_seed_kernel(*ctx);
  ASSERT_TRUE(empty.is_ok());
  EXPECT_TRUE(empty->codes.empty());
  EXPECT_NE(empty->note.find("no correct kernel stored yet"), std::string::npos);

  store_kernel(*ctx, "old", 5, 1.5, "kernel A");
  std::string best = store_kernel(*ctx, "older", 5, 2.5, "kernel B");
  store_kernel(*ctx, "old", 4, 9.0, "wrong but fast");
  auto seed = resolve_seed_kernel(*ctx);
  ASSERT_TRUE(seed.is_ok()) << seed.message();
  EXPECT_EQ(seed->codes, std::vector<std::string>{"kernel B"});
  EXPECT_EQ(seed->source_uuid, best);

  // best-<job_name> limits the search to one job; an unknown job is an error with the fix.
  auto from_old = job({"kernels_iter_0_path=best-old"});
  ASSERT_TRUE(from_old.is_ok());
  auto old_seed = resolve_seed_kernel(*from_old);
  ASSERT_TRUE(old_seed.is_ok()) << old_seed.message();
  EXPECT_EQ(old_seed->codes, std::vector<std::string>{"kernel A"});
  auto missing = job({"kernels_iter_0_path=best-nosuchjob"});
  ASSERT_TRUE(missing.is_ok());
  auto err = resolve_seed_kernel(*missing);
  ASSERT_FALSE(err.is_ok());
  EXPECT_NE(err.message().find("kernels_iter_0_path 'best-nosuchjob'"), std::string::npos);
  EXPECT_NE(err.message().find("kernelfoundry jobs"), std::string::npos);
}

TEST_F(SeedKernelTest, BestOfSeveralJobsAsThePythonKernelFoundryWritesIt) {
  auto ctx = job();
  ASSERT_TRUE(ctx.is_ok()) << ctx.message();
  store_kernel(*ctx, "jobA", 5, 1.5, "kernel A");
  std::string b = store_kernel(*ctx, "jobB", 5, 2.5, "kernel B");
  store_kernel(*ctx, "jobC", 5, 9.0, "kernel C, not named");

  // `best-jobA/jobB`: the best kernel of either job.
  auto both = job({"kernels_iter_0_path=best-jobA/jobB"});
  ASSERT_TRUE(both.is_ok()) << both.message();
  auto seed = resolve_seed_kernel(*both);
  ASSERT_TRUE(seed.is_ok()) << seed.message();
  EXPECT_EQ(seed->codes, std::vector<std::string>{"kernel B"});
  EXPECT_EQ(seed->source_uuid, b);
  EXPECT_EQ(seed->label, "best stored kernel (job jobB, 2.500x)");

  // A job of the list with nothing stored is no error while another has a kernel.
  auto one_known = job({"kernels_iter_0_path=best-nosuchjob/jobA"});
  ASSERT_TRUE(one_known.is_ok());
  auto from_a = resolve_seed_kernel(*one_known);
  ASSERT_TRUE(from_a.is_ok()) << from_a.message();
  EXPECT_EQ(from_a->codes, std::vector<std::string>{"kernel A"});

  auto none = job({"kernels_iter_0_path=best-x/y"});
  ASSERT_TRUE(none.is_ok());
  auto err = resolve_seed_kernel(*none);
  ASSERT_FALSE(err.is_ok());
  EXPECT_NE(err.message().find("kernels_iter_0_path 'best-x/y' (from command line argument "
                               "'kernels_iter_0_path=best-x/y'): jobs 'x', 'y' have no correct "
                               "kernel for task"),
            std::string::npos)
      << err.message();

  auto empty = job({"kernels_iter_0_path=best-/"});
  ASSERT_TRUE(empty.is_ok());
  auto no_job = resolve_seed_kernel(*empty);
  ASSERT_FALSE(no_job.is_ok());
  EXPECT_NE(no_job.message().find("names no job"), std::string::npos) << no_job.message();
}

TEST_F(SeedKernelTest, FilesAndRunDirectories) {
  ASSERT_TRUE(write_file(dir_ / "bare.cl", "__kernel void softmax() {}\n").is_ok());
  auto bare = job({"kernels_iter_0_path=" + (dir_ / "bare.cl").string()});
  ASSERT_TRUE(bare.is_ok()) << bare.message();
  auto seed = resolve_seed_kernel(*bare);
  ASSERT_TRUE(seed.is_ok()) << seed.message();
  EXPECT_EQ(seed->codes, std::vector<std::string>{"__kernel void softmax() {}\n"});

  // A whole task file contributes its EVOLVE block only.
  ASSERT_TRUE(write_file(dir_ / "whole.cl",
                         "// header\n// [EVOLVE_START]\nint inside;\n// [EVOLVE_END]\nint after;\n")
                  .is_ok());
  auto whole = job({"kernels_iter_0_path=" + (dir_ / "whole.cl").string()});
  ASSERT_TRUE(whole.is_ok());
  auto from_whole = resolve_seed_kernel(*whole);
  ASSERT_TRUE(from_whole.is_ok()) << from_whole.message();
  EXPECT_EQ(from_whole->codes, std::vector<std::string>{"int inside;\n"});

  // A run directory: its results.json names the best kernel, read from the database.
  auto ctx = job();
  ASSERT_TRUE(ctx.is_ok());
  std::string uuid = store_kernel(*ctx, "past", 5, 3.0, "kernel of the past run");
  ASSERT_TRUE(
      write_file(dir_ / "runs" / "past" / "results.json", "{\"best_uuid\": \"" + uuid + "\"}")
          .is_ok());
  auto run_dir = job({"kernels_iter_0_path=" + (dir_ / "runs" / "past").string()});
  ASSERT_TRUE(run_dir.is_ok());
  auto from_run = resolve_seed_kernel(*run_dir);
  ASSERT_TRUE(from_run.is_ok()) << from_run.message();
  EXPECT_EQ(from_run->codes, std::vector<std::string>{"kernel of the past run"});
  EXPECT_EQ(from_run->source_uuid, uuid);

  auto nothing = job({"kernels_iter_0_path=" + (dir_ / "nope.cl").string()});
  ASSERT_TRUE(nothing.is_ok());
  auto err = resolve_seed_kernel(*nothing);
  ASSERT_FALSE(err.is_ok());
  EXPECT_NE(err.message().find("no such file or directory"), std::string::npos);
  EXPECT_NE(err.message().find("best-<job_name>"), std::string::npos);
}

TEST(SeedKernelCodes, SeveralBlocksRoundTripAsJson) {
  std::vector<std::string> two = {"a\n", "b\n"};
  EXPECT_EQ(decode_codes(encode_codes(two), 2), two);
  // Bytes that are not UTF-8 (from an LLM answer) survive the JSON encoding exactly.
  const std::vector<std::string> raw = {"a\xff\xfe b", std::string("\xc3\0z", 3)};
  EXPECT_EQ(decode_codes(encode_codes(raw), 2), raw);
  EXPECT_EQ(encode_codes({"one"}), "one");
  EXPECT_EQ(decode_codes("[\"not\", \"json for one block\"]", 1),
            std::vector<std::string>{"[\"not\", \"json for one block\"]"});
}

}  // namespace
}  // namespace kf
