// End-to-end: bad configs and broken packages get clear errors that name the key, file and fix.
#include <gtest/gtest.h>

#include "e2e/cli_helpers.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

// Copies an example into the scratch dir so a test can break it.
fs::path copy_example(const Scratch& s, const std::string& name) {
  fs::path dst = s.dir() / ("pkg_" + name);
  fs::copy(example(name), dst, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  return dst;
}

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

TEST(CliErrors, RunWithoutTaskSaysHowToGiveOne) {
  Scratch s;
  CliRun r = s.run({"run", "validate=true"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "no task given: pass task=");
}

TEST(CliErrors, UnknownCommandLineKeySuggestsNearest) {
  Scratch s;
  CliRun r = s.run(
      with({"run", "task=" + example("reduction_cpp").string(), "max_iter=5"}, s.isolation_args()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "max_iter");
  EXPECT_CONTAINS(r.output, "max_iters");
  EXPECT_CONTAINS(r.output, "command line");
}

TEST(CliErrors, TypoInTaskConfigNamesFileAndLine) {
  Scratch s;
  fs::path pkg = copy_example(s, "reduction_cpp");
  auto text = read_file(pkg / "config.yaml");
  ASSERT_TRUE(text.is_ok());
  ASSERT_TRUE(write_file(pkg / "config.yaml", *text + "branches_per_iteraton: 4\n").is_ok());
  int line = static_cast<int>(split_lines(*text).size()) + 1;
  CliRun r = s.run(with({"run", "task=" + pkg.string(), "validate=true"}, s.isolation_args()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "branches_per_iteraton");
  EXPECT_CONTAINS(r.output, "config.yaml:" + std::to_string(line));
  EXPECT_CONTAINS(r.output, "branches_per_iteration");
}

TEST(CliErrors, WrongTypeIsNamed) {
  Scratch s;
  CliRun r = s.run(with({"run", "task=" + example("reduction_cpp").string(), "max_iters=lots"},
                        s.isolation_args()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "max_iters");
  EXPECT_CONTAINS(r.output, "lots");
}

TEST(CliErrors, MissingJobNameAndUnknownLanguage) {
  Scratch s;
  fs::path pkg = copy_example(s, "reduction_cpp");
  ASSERT_TRUE(
      write_file(pkg / "config.yaml", "task_name: t\nlanguage: CPP\ngpu_arch: cpu\n").is_ok());
  CliRun r = s.run(with({"run", "task=" + pkg.string(), "validate=true"}, s.isolation_args()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "job_name");
  ASSERT_TRUE(write_file(pkg / "config.yaml", "task_name: t\nlanguage: FORTRAN\n").is_ok());
  CliRun r2 = s.run(
      with({"run", "task=" + pkg.string(), "validate=true", "job_name=j"}, s.isolation_args()));
  EXPECT_EQ(r2.exit_code, 2);
  EXPECT_CONTAINS(r2.output, "FORTRAN");
  EXPECT_CONTAINS(r2.output, "CPP");
}

TEST(CliErrors, BrokenBlocksAreReportedWithFileAndLine) {
  Scratch s;
  fs::path pkg = copy_example(s, "reduction_cpp");
  ASSERT_TRUE(write_file(pkg / "extra.h",
                         "// [EVOLVE_START]\nint a;\n// [EVOLVE_START]\nint b;\n// [EVOLVE_END]\n")
                  .is_ok());
  CliRun r = s.run(with({"run", "task=" + pkg.string(), "validate=true"}, s.isolation_args()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "extra.h:3");
  EXPECT_CONTAINS(r.output, "extra.h:1");

  ASSERT_TRUE(write_file(pkg / "extra.h", "// [REFERENCE_START]\nint a;\n").is_ok());
  CliRun r2 = s.run(with({"run", "task=" + pkg.string(), "validate=true"}, s.isolation_args()));
  EXPECT_EQ(r2.exit_code, 2);
  EXPECT_CONTAINS(r2.output, "extra.h:1");
}

TEST(CliErrors, PackageWithoutEvolveBlock) {
  Scratch s;
  fs::path pkg = s.dir() / "empty_pkg";
  ASSERT_TRUE(
      write_file(pkg / "config.yaml", "task_name: t\njob_name: j\nlanguage: CPP\n").is_ok());
  ASSERT_TRUE(write_file(pkg / "task.cpp", "int main() { return 0; }\n").is_ok());
  CliRun r = s.run(with({"run", "task=" + pkg.string(), "validate=true"}, s.isolation_args()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "EVOLVE");
}

TEST(CliErrors, AllowTemplatedAbortsForOcl) {
  Scratch s;
  CliRun r = s.run(with({"run", "task=" + example("softmax_ocl").string(), "validate=true",
                         "prompt.allow_templated=true"},
                        s.isolation_args()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "AssertionError: Must provide example if allow_templated=True");
}

TEST(CliErrors, MissingToolchainForSycl) {
  Scratch s;
  CliRun r = s.run(
      with({"run", "task=" + example("reduction_cpp").string(), "validate=true", "language=SYCL"},
           s.isolation_args()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "icpx");
  CliRun t = s.run(
      with({"run", "task=" + example("reduction_cpp").string(), "validate=true", "language=triton"},
           s.isolation_args()));
  EXPECT_EQ(t.exit_code, 2);
  EXPECT_CONTAINS(t.output, "triton");
}

TEST(CliConfig, ShowPrintsOrigins) {
  Scratch s;
  CliRun r = s.run({"config", "show", "task=" + example("reduction_cpp").string(), "max_iters=7"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_CONTAINS(r.output, "max_iters: 7");
  EXPECT_CONTAINS(r.output, "max_iters=7");
  EXPECT_CONTAINS(r.output, "config.yaml");
  EXPECT_CONTAINS(r.output, "base.yaml");
}

}  // namespace kf::e2e

namespace kf::e2e {

TEST(CliErrors, SearchSetUpMistakesStopBeforeTheJobIsRecorded) {
  Scratch s;
  // The public API with a key variable that is not set: the error names it and both fixes.
  CliRun r = s.run(with({"run", "task=" + example("softmax_ocl").string(), "job_name=nokey",
                         "inference.servers=[{server_type: openai, model_name: gpt-4o, "
                         "api_key_env: KF_E2E_UNSET_KEY}]"},
                        s.isolation_args()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_CONTAINS(r.output, "KF_E2E_UNSET_KEY is not set");
  EXPECT_CONTAINS(r.output, ".env");
  // resume=true of a job that does not exist.
  CliRun resume = s.run(with({"run", "task=" + example("softmax_ocl").string(),
                              "+experiment=replay_demo", "job_name=never_ran", "resume=true"},
                             s.isolation_args()));
  EXPECT_EQ(resume.exit_code, 2);
  EXPECT_CONTAINS(resume.output, "resume=true: there is no job 'never_ran'");
  // Neither took a job name.
  CliRun jobs = s.run(with({"jobs"}, s.isolation_args()));
  EXPECT_EQ(jobs.output.find("nokey"), std::string::npos) << jobs.output;
  EXPECT_EQ(jobs.output.find("never_ran"), std::string::npos) << jobs.output;
}

}  // namespace kf::e2e
