// GPU end-to-end tests (KF_GPU_TESTS=ON; need an NVIDIA GPU and nvcc): the CUDA examples
// validate, and CUDA candidates get the right verdicts through the real CLI.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/cli_helpers.h"
#include "store/store.h"

namespace kf::e2e {
namespace {

std::filesystem::path candidate_path(const std::string& task, const std::string& file) {
  return source_dir() / "tests" / "gpu" / "candidates" / task / file;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// The GPU machine has the H200; the examples name it, and `native` would detect it too.
TEST(CudaExamples, SoftmaxAndMatmulValidate) {
  for (const char* name : {"softmax_cuda", "matmul_cuda"}) {
    Scratch s;
    CliRun r =
        s.run(with({"run", "task=" + example(name).string(), "validate=true"}, s.isolation_args()));
    std::cout << r.output;
    EXPECT_EQ(r.exit_code, 0) << name;
    EXPECT_CONTAINS(r.output, "verdict 5 (correct)");
  }
}

TEST(CudaCandidates, EachGetsItsVerdictAndTheRunGoesOn) {
  Scratch s;
  const std::vector<std::string> files = {"does_not_compile.cu", "wrong_sum.cu", "out_of_bounds.cu",
                                          "no_launch.cu", "warp_per_row.cu"};
  std::vector<std::string> args = {"eval", "task=" + example("softmax_cuda").string(),
                                   "job_name=gpu_cands"};
  for (const auto& f : files) args.push_back(candidate_path("softmax_cuda", f).string());
  CliRun r = s.run(with(args, s.isolation_args()), 900);
  std::cout << r.output;
  ASSERT_EQ(r.exit_code, 0);

  auto store = Store::open(s.db());
  ASSERT_TRUE(store.is_ok()) << store.message();
  auto rows = (*store)->kernels({.job_name = "gpu_cands", .order = KernelOrder::kTrialOrder});
  ASSERT_TRUE(rows.is_ok()) << rows.message();
  ASSERT_EQ(rows->size(), files.size());
  const auto& k = *rows;
  EXPECT_EQ(k[0].verdict, 1) << k[0].reason;
  EXPECT_CONTAINS(k[0].eval_log, "error");
  EXPECT_EQ(k[1].verdict, 4) << k[1].reason;
  EXPECT_EQ(k[2].verdict, 2) << k[2].reason;
  EXPECT_CONTAINS(k[2].reason, "out-of-bounds write");
  EXPECT_LT(k[3].verdict, 5) << k[3].reason;
  EXPECT_EQ(k[4].verdict, 5) << k[4].reason;
  ASSERT_TRUE(k[4].speedup.has_value());
  EXPECT_GT(*k[4].speedup, 0.0);
}

// Nsight Compute profiles a correct kernel and the reference (profile_original_model) on the
// reference's longest shape, inside the run sandbox; the eval log the next prompt sees has both.
TEST(CudaProfile, CorrectKernelIsProfiledWithNcuBesideTheReference) {
  Scratch s;
  std::vector<std::string> args = {"eval", "task=" + example("softmax_cuda").string(),
                                   "job_name=gpu_profile",
                                   "eval_config.profile_original_model=true",
                                   candidate_path("softmax_cuda", "warp_per_row.cu").string()};
  CliRun r = s.run(with(args, s.isolation_args()), 900);
  std::cout << r.output;
  ASSERT_EQ(r.exit_code, 0);
  EXPECT_CONTAINS(r.output, ", profile ");
  auto store = Store::open(s.db());
  ASSERT_TRUE(store.is_ok()) << store.message();
  auto rows = (*store)->kernels({.job_name = "gpu_profile", .order = KernelOrder::kTrialOrder});
  ASSERT_TRUE(rows.is_ok()) << rows.message();
  ASSERT_EQ(rows->size(), 1u);
  const auto& k = (*rows)[0];
  std::cout << k.eval_log << "\n";
  ASSERT_EQ(k.verdict, 5) << k.reason;
  EXPECT_CONTAINS(k.eval_log, "== profile (");
  EXPECT_CONTAINS(k.eval_log, "ncu on shape ");
  EXPECT_CONTAINS(k.eval_log, "throughput, % of peak: SM ");
  EXPECT_CONTAINS(k.eval_log, "warp stalls, cycles per issued instruction");
  EXPECT_CONTAINS(k.eval_log, "reference, the baseline to beat, on the same shape:");
  EXPECT_CONTAINS(k.eval_log, "softmax_reference_kernel");
  auto profile = nlohmann::json::parse(k.profile_json, nullptr, false);
  ASSERT_TRUE(profile.is_object()) << k.profile_json;
  EXPECT_EQ(profile.value("profiler", ""), "ncu");
  ASSERT_GE(profile["kernels"].size(), 1u);
  EXPECT_GT(profile.value("total_ms", 0.0), 0.0);
  EXPECT_TRUE(profile["reference"].is_object());
}

}  // namespace
}  // namespace kf::e2e
