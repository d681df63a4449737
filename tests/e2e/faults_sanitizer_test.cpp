// The compute-sanitizer settings at a job's start, through the real CLI on a machine without the
// tool (the CPU machine): `on` stops a CUDA job before anything is built, `auto` says so in one
// note line and goes on, `off` and other languages say nothing. (The pass itself: tests/gpu.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "e2e/cli_helpers.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

size_t count_of(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// Whether compute-sanitizer is where the job would look (then these tests do not apply).
bool have_compute_sanitizer() {
  const char* path = std::getenv("PATH");
  std::vector<std::string> dirs = split(path != nullptr ? path : "", ':');
  dirs.push_back("/usr/local/cuda/bin");
  dirs.push_back("/usr/local/cuda/compute-sanitizer");
  for (const std::string& d : dirs)
    if (!d.empty() && ::access((d + "/compute-sanitizer").c_str(), X_OK) == 0) return true;
  return false;
}

std::vector<std::string> cuda_eval(const Scratch& s, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {
      "eval", "task=" + example("softmax_cuda").string(), "job_name=san",
      (source_dir() / "tests" / "gpu" / "candidates" / "softmax_cuda" / "honest_warp_vec4.cu")
          .string()};
  for (const auto& a : s.isolation_args()) args.push_back(a);
  // The reference build stops at once: these tests are about the job's start.
  args.push_back("build_timeout=0.5");
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

TEST(SanitizerSetting, OnWithoutTheToolStopsACudaJobBeforeAnythingIsBuilt) {
  if (have_compute_sanitizer()) GTEST_SKIP() << "compute-sanitizer is installed here";
  Scratch s;
  CliRun r = s.run(cuda_eval(s, {"eval_config.compute_sanitizer=on"}), 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "eval_config.compute_sanitizer is on, but compute-sanitizer was found");
  EXPECT_CONTAINS(r.output, "set eval_config.compute_sanitizer: auto");
  EXPECT_EQ(r.output.find("reference: building"), std::string::npos) << r.output;
}

TEST(SanitizerSetting, AutoWithoutTheToolIsOneNoteLineAndTheJobGoesOn) {
  if (have_compute_sanitizer()) GTEST_SKIP() << "compute-sanitizer is installed here";
  Scratch s;
  CliRun r = s.run(cuda_eval(s, {}), 60);  // auto is the default
  EXPECT_EQ(count_of(r.output, "compute-sanitizer was not found"), 1u) << r.output;
  EXPECT_CONTAINS(r.output, "eval_config.compute_sanitizer: off to silence this");
  EXPECT_CONTAINS(r.output, "reference: building");  // went on (to fail later: no GPU here)
}

TEST(SanitizerSetting, OffSaysNothing) {
  Scratch s;
  CliRun r = s.run(cuda_eval(s, {"eval_config.compute_sanitizer=off"}), 60);
  EXPECT_EQ(r.output.find("compute-sanitizer"), std::string::npos) << r.output;
  EXPECT_CONTAINS(r.output, "reference: building");
}

TEST(SanitizerSetting, AnUnknownToolIsNamedWithTheNearestOne) {
  Scratch s;
  CliRun r = s.run(cuda_eval(s, {"eval_config.sanitizer_tools=memcheck,racechek"}), 60);
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_CONTAINS(r.output,
                  "eval_config.sanitizer_tools: 'racechek' is not a compute-sanitizer tool");
  EXPECT_CONTAINS(r.output, "did you mean 'racecheck'?");
  EXPECT_EQ(r.output.find("reference: building"), std::string::npos) << r.output;
}

// Through `run` (the search job's start) rather than `eval`.
TEST(SanitizerSetting, OnIsNoErrorForOtherLanguages) {
  Scratch s;
  std::vector<std::string> args = {"run", "task=" + example("reduction_cpp").string(),
                                   "job_name=san_cpp", "validate=true",
                                   "eval_config.compute_sanitizer=on"};
  for (const auto& a : s.isolation_args()) args.push_back(a);
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  CliRun r = s.run(args, 120);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("compute-sanitizer"), std::string::npos) << r.output;
  EXPECT_CONTAINS(r.output, "verdict 5 (correct)");
}

}  // namespace
}  // namespace kf::e2e
