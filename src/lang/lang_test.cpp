// Tests for build recipes and the content-addressed build cache, with a fake process runner.
#include <gtest/gtest.h>

#include <cstdlib>

#include "lang/lang.h"
#include "util/fs.h"

namespace kf {
namespace {

// A fake compiler: writes the file named after -o and succeeds, unless the source says FAIL.
ProcessResult fake_compiler(const ProcessSpec& spec) {
  std::string out;
  bool fail = false;
  for (size_t i = 0; i + 1 < spec.argv.size(); ++i) {
    if (spec.argv[i] == "-c") {
      auto text = read_file(spec.argv[i + 1]);
      fail = text.is_ok() && text->find("FAIL") != std::string::npos;
    }
    if (spec.argv[i] == "-o") out = spec.argv[i + 1];
  }
  if (fail)
    return FakeProcessRunner::exited(1, spec.argv.back() + ":3:1: error: planted failure\n");
  (void)write_file(out, "object");
  return FakeProcessRunner::exited(0);
}

class LangTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = *make_temp_dir(fs::temp_directory_path(), "kf_lang_test_");
    tc_.include_dir = root_ / "include";
    tc_.lib_dir = root_ / "lib";
    ASSERT_TRUE(
        write_file(tc_.include_dir / "kernelfoundry" / "harness.h", "// harness\n").is_ok());
    ASSERT_TRUE(write_file(tc_.lib_dir / "libkf_harness_host.a", "lib").is_ok());
    ASSERT_TRUE(write_file(tc_.lib_dir / "libkf_harness_opencl.a", "lib").is_ok());
    ASSERT_TRUE(write_file(src() / "task.cpp", "int main() {}\n").is_ok());
    ASSERT_TRUE(write_file(src() / "kernel.cpp", "void k() {}\n").is_ok());
    ASSERT_TRUE(write_file(src() / "kernel.cl", "__kernel void k() {}\n").is_ok());
  }
  void TearDown() override { fs::remove_all(root_); }
  fs::path src() const { return root_ / "src"; }
  BuildRequest request(Language lang = Language::kCpp) const {
    return {lang, src(), root_ / "build", ""};
  }

  fs::path root_;
  Toolchain tc_;
};

}  // namespace

TEST_F(LangTest, CppPlanCompilesEachSourceAndLinksTheHostHarness) {
  auto plan = plan_build(request(), tc_);
  ASSERT_TRUE(plan.is_ok()) << plan.message();
  ASSERT_EQ(plan->compiles.size(), 2u);  // kernel.cpp, task.cpp; kernel.cl is not compiled
  EXPECT_EQ(plan->compiles[0].label, "compile kernel.cpp");
  bool has_lib = false;
  for (const auto& a : plan->link.argv) has_lib |= a == "-lkf_harness_host";
  EXPECT_TRUE(has_lib);
}

TEST_F(LangTest, OclTaskBinaryDoesNotDependOnClSources) {
  auto before = plan_build(request(Language::kOcl), tc_);
  ASSERT_TRUE(before.is_ok()) << before.message();
  ASSERT_TRUE(write_file(src() / "kernel.cl", "__kernel void k2() {}\n").is_ok());
  auto after = plan_build(request(Language::kOcl), tc_);
  EXPECT_EQ(before->link.cache_key, after->link.cache_key);
}

TEST_F(LangTest, CacheRebuildsOnlyWhatChanged) {
  FakeProcessRunner runner(fake_compiler);
  BuildLimits limits;
  fs::path cache = root_ / "cache";
  auto plan = plan_build(request(), tc_);
  ASSERT_TRUE(plan.is_ok());
  BuildOutcome first = run_build(*plan, cache, limits, runner);
  ASSERT_TRUE(first.ok) << first.error;
  EXPECT_EQ(first.steps_run, 3);
  EXPECT_TRUE(fs::exists(first.binary));

  BuildOutcome again = run_build(*plan_build(request(), tc_), cache, limits, runner);
  ASSERT_TRUE(again.ok);
  EXPECT_EQ(again.steps_run, 0);
  EXPECT_EQ(again.binary, first.binary);

  ASSERT_TRUE(write_file(src() / "kernel.cpp", "void k() { /* changed */ }\n").is_ok());
  BuildOutcome changed = run_build(*plan_build(request(), tc_), cache, limits, runner);
  ASSERT_TRUE(changed.ok);
  EXPECT_EQ(changed.steps_run, 2);  // kernel.cpp and the link
  EXPECT_EQ(changed.steps_cached, 1);
  EXPECT_NE(changed.binary, first.binary);
}

TEST_F(LangTest, HeaderChangeInvalidatesObjects) {
  auto a = plan_build(request(), tc_);
  ASSERT_TRUE(write_file(src() / "kernel.h", "#define X 2\n").is_ok());
  auto b = plan_build(request(), tc_);
  EXPECT_NE(a->compiles[0].cache_key, b->compiles[0].cache_key);
}

TEST_F(LangTest, CompileFailureReportsStepAndOutput) {
  ASSERT_TRUE(write_file(src() / "kernel.cpp", "FAIL\n").is_ok());
  FakeProcessRunner runner(fake_compiler);
  BuildOutcome r = run_build(*plan_build(request(), tc_), root_ / "cache", {}, runner);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.failed_step, "compile kernel.cpp");
  EXPECT_NE(r.output.find("planted failure"), std::string::npos);
}

TEST_F(LangTest, MissingToolchainsAreNamed) {
  auto sycl = plan_build(request(Language::kSycl), tc_);
  ASSERT_FALSE(sycl.is_ok());
  EXPECT_NE(sycl.message().find("icpx"), std::string::npos);
  auto triton = plan_build(request(Language::kTriton), tc_);
  ASSERT_FALSE(triton.is_ok());
  EXPECT_NE(triton.message().find("triton"), std::string::npos);
  Toolchain no_nvcc = tc_;
  no_nvcc.nvcc.clear();
  auto cuda = plan_build(request(Language::kCuda), no_nvcc);
  ASSERT_FALSE(cuda.is_ok());
  EXPECT_NE(cuda.message().find("nvcc"), std::string::npos);
}

TEST_F(LangTest, MissingCxxIsNamedWithTheFix) {
  fs::path missing = root_ / "no-such-compiler";
  const char* old_dir = std::getenv("KERNELFOUNDRY_HARNESS_DIR");
  const char* old_cxx = std::getenv("CXX");
  std::string saved_dir = old_dir ? old_dir : "", saved_cxx = old_cxx ? old_cxx : "";
  ::setenv("KERNELFOUNDRY_HARNESS_DIR", root_.c_str(), 1);
  ::setenv("CXX", missing.c_str(), 1);
  auto tc = find_toolchain();
  old_dir ? ::setenv("KERNELFOUNDRY_HARNESS_DIR", saved_dir.c_str(), 1)
          : ::unsetenv("KERNELFOUNDRY_HARNESS_DIR");
  old_cxx ? ::setenv("CXX", saved_cxx.c_str(), 1) : ::unsetenv("CXX");
  ASSERT_FALSE(tc.is_ok());
  EXPECT_NE(tc.message().find("the C++ compiler '" + missing.string() +
                              "' (from the environment variable CXX) was not found"),
            std::string::npos)
      << tc.message();
  EXPECT_NE(tc.message().find("set CXX"), std::string::npos) << tc.message();
}

TEST_F(LangTest, CompilerThatCannotStartIsAnEnvironmentFault) {
  FakeProcessRunner runner([](const ProcessSpec& spec) {
    ProcessResult r;
    r.start_error = "cannot run '" + spec.argv[0] + "': not found in PATH";
    return r;
  });
  BuildOutcome r = run_build(*plan_build(request(), tc_), root_ / "cache", {}, runner);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.environment_error.find("not found in PATH"), std::string::npos)
      << r.environment_error;
}

TEST_F(LangTest, FullDiskInTheLinkIsAnEnvironmentFaultNotACompileError) {
  FakeProcessRunner runner([](const ProcessSpec& spec) {
    for (const auto& a : spec.argv)
      if (a == "-c") return fake_compiler(spec);
    return FakeProcessRunner::exited(
        1,
        "/usr/bin/ld: final link failed: No space left on device\ncollect2: error: ld "
        "returned 1 exit status\n");
  });
  // The disk really is full where the build runs.
  WriteProbe previous = set_write_probe([](const fs::path&) { return true; });
  BuildOutcome r = run_build(*plan_build(request(), tc_), root_ / "cache", {}, runner);
  set_write_probe(previous);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.environment_error,
            "link task binary: /usr/bin/ld: final link failed: No space left on device (the disk "
            "is full: free some space)");
}

TEST_F(LangTest, CandidateTextClaimingAFullDiskIsItsOwnCompileError) {
  // `#error No space left on device` in a candidate: the compiler repeats the words, but the
  // machine can write where the build runs, so the job is not stopped as an environment fault.
  FakeProcessRunner runner([](const ProcessSpec& spec) {
    return FakeProcessRunner::exited(1,
                                     "kernel.cpp:3:2: error: #error No space left on device\n"
                                     "/usr/bin/ld: final link failed: No space left on device\n");
  });
  BuildOutcome r = run_build(*plan_build(request(), tc_), root_ / "cache", {}, runner);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.environment_error, "");
  EXPECT_FALSE(r.failed_step.empty());
}

TEST(EnvironmentFault, FoundInToolOutputButNotInQuotedSource) {
  EXPECT_EQ(environment_fault_in_output("cc1plus: fatal error: error writing to /tmp/ccX.s: "
                                        "No space left on device\n",
                                        false),
            "cc1plus: fatal error: error writing to /tmp/ccX.s: No space left on device (the "
            "disk is full: free some space)");
  EXPECT_NE(environment_fault_in_output("as: can't open x.o: Read-only file system", false), "");
  EXPECT_NE(environment_fault_in_output("ld: Disk quota exceeded", false), "");
  // A candidate's comment quoted by the compiler is not the machine's fault.
  EXPECT_EQ(environment_fault_in_output("k.cpp:3:1: error: expected ';'\n"
                                        "    3 | // No space left on device\n"
                                        "      | ^\n",
                                        false),
            "");
  // EFBIG counts only under a file size limit set outside KernelFoundry.
  EXPECT_EQ(environment_fault_in_output("ld: final link failed: File too large", false), "");
  EXPECT_NE(environment_fault_in_output("ld: final link failed: File too large", true), "");
  EXPECT_EQ(environment_fault_in_output("error: 'x' was not declared in this scope", true), "");
}

TEST(Language, ParsesAnyCaseAndSuggests) {
  EXPECT_EQ(*parse_language("ocl"), Language::kOcl);
  EXPECT_EQ(*parse_language("Triton"), Language::kTriton);
  auto bad = parse_language("cudaa");
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("did you mean 'cuda'"), std::string::npos) << bad.message();
}

}  // namespace kf
