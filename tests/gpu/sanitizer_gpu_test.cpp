// GPU tests of the compute-sanitizer pass (KF_GPU_TESTS=ON; need an NVIDIA GPU, nvcc and
// compute-sanitizer): a kernel that reads one element past the end of its input, with every value
// right, is flagged by memcheck and not counted as a win; honest kernels stay clean.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "e2e/cli_helpers.h"
#include "store/store.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

bool have_compute_sanitizer() {
  const char* path = std::getenv("PATH");
  std::vector<std::string> dirs = split(path != nullptr ? path : "", ':');
  dirs.push_back("/usr/local/cuda/bin");
  dirs.push_back("/usr/local/cuda/compute-sanitizer");
  for (const std::string& d : dirs)
    if (!d.empty() && ::access((d + "/compute-sanitizer").c_str(), X_OK) == 0) return true;
  return false;
}

// One candidate per job, so each is the job's first correct kernel, i.e. its best: the pass runs.
KernelRecord eval_one(const Scratch& s, const std::string& file, std::string* output) {
  std::string job = "san_" + replace_all(file, ".", "_");
  JobOutcome out =
      s.run_job(job,
                {"eval", "task=" + example("softmax_cuda").string(), "job_name=" + job,
                 (source_dir() / "tests" / "gpu" / "candidates" / "softmax_cuda" / file).string(),
                 "eval_config.compute_sanitizer=on", "eval_config.sanitizer_timeout=300"},
                900);
  *output = out.cli.output;
  std::cout << out.cli.output;
  EXPECT_EQ(out.cli.exit_code, 0) << file;
  if (out.kernels.size() != 1) {
    ADD_FAILURE() << file << ": " << out.kernels.size() << " kernel rows; " << out.db_error;
    return {};
  }
  if (out.results.is_object())
    *output += "\nbest_uuid: " + out.results.value("best_uuid", std::string("?")) + "\n";
  return out.kernels[0];
}

bool has_flag(const KernelRecord& k, const std::string& name, bool suspect) {
  auto flags = nlohmann::json::parse(k.flags_json.empty() ? "[]" : k.flags_json, nullptr, false);
  if (!flags.is_array()) return false;
  for (const auto& f : flags)
    if (f.is_object() && f.value("flag", "") == name && f.value("suspect", false) == suspect)
      return true;
  return false;
}

TEST(CudaSanitizer, AnOverReadWithRightValuesIsFlaggedByMemcheck) {
  if (!have_compute_sanitizer()) GTEST_SKIP() << "compute-sanitizer is not installed";
  Scratch s;
  std::string output;
  KernelRecord k = eval_one(s, "sanitize_overread_zero.cu", &output);
  EXPECT_EQ(k.verdict, 5) << k.reason;  // every value right: the checker passes it
  EXPECT_TRUE(has_flag(k, "sanitizer_memcheck", true)) << k.flags_json;
  EXPECT_DOUBLE_EQ(k.fitness, 5.0) << "the speedup must not count";
  EXPECT_CONTAINS(k.reason, "not counted as a win");
  EXPECT_CONTAINS(k.eval_log, "== compute-sanitizer");
  EXPECT_CONTAINS(k.eval_log, "Invalid __global__ read of size 4 bytes");
  EXPECT_CONTAINS(k.eval_log, "softmax_tail_zero");
  EXPECT_CONTAINS(k.eval_log, "guard every global load and store");
  EXPECT_CONTAINS(output, "sanitizer ");     // the pass's time on the progress line
  EXPECT_CONTAINS(output, "best_uuid: \n");  // not reported as the best
}

TEST(CudaSanitizer, HonestKernelsStayClean) {
  if (!have_compute_sanitizer()) GTEST_SKIP() << "compute-sanitizer is not installed";
  for (const char* file : {"honest_warp_vec4.cu", "honest_block_smem.cu"}) {
    Scratch s;
    std::string output;
    KernelRecord k = eval_one(s, file, &output);
    EXPECT_EQ(k.verdict, 5) << file << ": " << k.reason;
    EXPECT_EQ(k.flags_json.find("sanitizer_"), std::string::npos) << file << ": " << k.flags_json;
    EXPECT_GT(k.fitness, 5.0) << file;
    EXPECT_CONTAINS(k.eval_log, "- memcheck: no errors");
    EXPECT_CONTAINS(k.eval_log, "- racecheck: no errors");
  }
}

}  // namespace
}  // namespace kf::e2e
