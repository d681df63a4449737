// The protocol end to end on the OpenCL backend (PoCL on this machine): kernels written to a temp
// folder and found through --kernel-dir, candidates misbehaving in the ways the harness catches.
#include <gtest/gtest.h>

#include "harness/test_util.h"
#include "kernelfoundry/harness.h"

namespace kf = kernelfoundry;
using kf::testing::run_main;

namespace {

const char* kKernels = R"CL(
__kernel void add_one(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = x[i] + 1.0f;
}
__kernel void no_write(__global const float* x, __global float* y, int n) {}
__kernel void modify_input(__global float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) { y[i] = x[i] + 1.0f; if (i == 0) x[0] = 42.0f; }
}
__kernel void past_end(__global const float* x, __global float* y, int n) {
  int i = get_global_id(0);
  if (i < n) y[i] = x[i] + 1.0f;
  if (i == 0) y[n + 3] = 0.0f;
}
)CL";

// y = x + 1; the candidate is the kernel named by `kernel` (call 2 may use `second`).
struct AddOneCl : kf::Problem {
  std::string kernel = "add_one";
  std::string second;  // non-empty: the kernel for even calls
  std::string file = "kernels.cl";
  int calls = 0;

  void setup(kf::Case& c) override {
    c.input("x", kf::f32, c.dim("n"), kf::normal(0, 1));
    c.output("y", kf::f32, c.dim("n"), kf::tolerance(1e-6, 1e-7));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    std::string name = "add_one";
    if (impl == kf::Impl::Candidate) {
      ++calls;
      name = (!second.empty() && calls % 2 == 0) ? second : kernel;
    }
    kf::OpenCL& cl = c.opencl();
    int n = int(c.dim("n"));
    kf::ClKernel& k = cl.kernel(impl == kf::Impl::Candidate ? file : "kernels.cl", name);
    k.args(c.buffer("x"), c.buffer("y"), n);
    cl.launch(k, {(n + 63) / 64 * 64}, {64});
  }
};

kf::Suite suite() {
  kf::Suite s;
  s.backend = kf::Backend::OpenCL;
  s.correctness = {{{"n", 33}}};
  s.benchmarks = {kf::benchmark("add_one", {{{"n", 4096}}})};
  return s;
}

class OpenCLRunner : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = kf::testing::make_temp_dir();
    kf::testing::write_text(dir_ + "/kernels.cl", kKernels);
    kf::testing::write_text(
        dir_ + "/broken.cl",
        "__kernel void add_one(__global float* y) { y[0] = undefined_thing; }\n");
  }
  kf::testing::RunResult run(AddOneCl& p, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"--phase", "correctness",  "--seeds",
                                     "1",       "--kernel-dir", dir_};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_main(p, suite(), args);
  }
  std::string dir_;
};

bool has_flag(const nlohmann::json& j, const std::string& flag) {
  for (const auto& f : j["flags"]) {
    if (f["flag"] == flag) return true;
  }
  return false;
}

}  // namespace

TEST_F(OpenCLRunner, CorrectKernelPassesAndIsTimedFromEvents) {
  AddOneCl p;
  std::vector<std::string> args = kf::testing::quick_benchmark_args();
  args.insert(args.end(), {"--phase", "all"});
  auto r = run(p, args);
  ASSERT_EQ(r.exit_code, 0) << r.stdout_text;
  EXPECT_EQ(r.json["backend"], "opencl");
  EXPECT_FALSE(r.json["device"].get<std::string>().empty());
  EXPECT_TRUE(r.json["device_info"].contains("platform"));
  EXPECT_TRUE(r.json["stats"]["n=4096"]["device_timed"].get<bool>());
  EXPECT_EQ(r.json["stats"]["n=4096"]["timer"], "events");  // the launches' profiling events
  EXPECT_GT(r.json["stats"]["n=4096"]["median_ms"].get<double>(), 0);
}

TEST_F(OpenCLRunner, UntouchedOutputGetsThePoisonMessage) {
  AddOneCl p;
  p.kernel = "no_write";
  auto r = run(p);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.json["reason"].get<std::string>().find(
                "output 'y' was never written (still holds the poison pattern)"),
            std::string::npos)
      << r.json["reason"];
}

// An input larger than one checksum chunk is downloaded in pieces; an untouched one must still
// match the checksum taken when it was filled (it once did not: every large input "changed").
TEST_F(OpenCLRunner, LargeUntouchedInputIsNotReportedModified) {
  AddOneCl p;
  kf::Suite s = suite();
  s.correctness = {{{"n", 17 << 20}}};  // 68 MiB of floats: two chunks
  auto r = run_main(p, s, {"--phase", "correctness", "--seeds", "1", "--kernel-dir", dir_});
  EXPECT_EQ(r.exit_code, 0) << r.stdout_text;
  EXPECT_FALSE(has_flag(r.json, "input_modified")) << r.stdout_text;
}

TEST_F(OpenCLRunner, ModifiedInputFails) {
  AddOneCl p;
  p.kernel = "modify_input";
  auto r = run(p);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.json["reason"].get<std::string>().find("modified input 'x'"), std::string::npos);
}

TEST_F(OpenCLRunner, CorrectOnlyOnFirstCallFailsOnCallTwo) {
  AddOneCl p;
  p.second = "no_write";
  auto r = run(p);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.json["cases"].back()["call"], 2);
}

TEST_F(OpenCLRunner, WritePastTheEndIsCaughtByTheGuard) {
  AddOneCl p;
  p.kernel = "past_end";
  auto r = run(p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.json["error_kind"], "out_of_bounds");
  EXPECT_TRUE(has_flag(r.json, "out_of_bounds_write"));
}

TEST_F(OpenCLRunner, CompileErrorCarriesTheBuildLog) {
  AddOneCl p;
  p.file = "broken.cl";
  auto r = run(p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.json["error_kind"], "compile");
  EXPECT_NE(r.json["reason"].get<std::string>().find("OpenCL build of 'broken.cl' failed"),
            std::string::npos);
  EXPECT_NE(r.json["error_log"].get<std::string>().find("undefined_thing"), std::string::npos)
      << r.json["error_log"];
  EXPECT_NE(r.stdout_text.find("undefined_thing"), std::string::npos);
  // The driver's temporary copy of the source is named as the real file.
  EXPECT_NE(r.json["error_log"].get<std::string>().find("broken.cl:1:"), std::string::npos)
      << r.json["error_log"];
  EXPECT_EQ(r.json["error_log"].get<std::string>().find("tempfile_"), std::string::npos)
      << r.json["error_log"];
}

// Inline assembly formed by token pasting (the evaluator's screen sees no `__asm__` in the text)
// meets the build options' macro and fails to build, naming why.
TEST_F(OpenCLRunner, PastedInlineAssemblyDoesNotBuild) {
  kf::testing::write_text(dir_ + "/pasted.cl",
                          "#define JOIN(a, b) a##b\n"
                          "__kernel void add_one(__global const float* x, __global float* y, "
                          "int n) {\n"
                          "  JOIN(__as, m__) volatile(\"nop\");\n"
                          "  int i = get_global_id(0);\n"
                          "  if (i < n) y[i] = x[i] + 1.0f;\n"
                          "}\n");
  AddOneCl p;
  p.file = "pasted.cl";
  auto r = run(p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.json["error_kind"], "compile");
  EXPECT_NE(r.json["error_log"].get<std::string>().find("kf_inline_assembly_is_not_allowed"),
            std::string::npos)
      << r.json["error_log"];
  // The same kernel without the assembly builds and passes: the options break nothing else.
  kf::testing::write_text(dir_ + "/pasted.cl",
                          "#define JOIN(a, b) a##b\n"
                          "__kernel void JOIN(add, _one)(__global const "
                          "float* x, __global float* y, int n) {\n"
                          "  int i = get_global_id(0);\n"
                          "  if (i < n) y[i] = x[i] + 1.0f;\n"
                          "}\n");
  AddOneCl q;
  q.file = "pasted.cl";
  auto ok = run(q);
  EXPECT_EQ(ok.exit_code, 0) << ok.stdout_text;
}

TEST_F(OpenCLRunner, MissingKernelNameListsWhatTheFileDefines) {
  AddOneCl p;
  p.kernel = "softmax";
  auto r = run(p);
  EXPECT_EQ(r.exit_code, 2);
  std::string reason = r.json["reason"];
  EXPECT_NE(reason.find("kernel 'softmax' not found"), std::string::npos) << reason;
  EXPECT_NE(reason.find("add_one"), std::string::npos) << reason;
}

TEST_F(OpenCLRunner, HostPointerOfDeviceBufferIsAClearError) {
  struct HostOnCl : AddOneCl {
    void run(kf::Case& c, kf::Impl impl) override {
      if (impl == kf::Impl::Candidate) c.buffer("y").host<float>();
      AddOneCl::run(c, impl);
    }
  } p;
  auto r = run(p);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.json["reason"].get<std::string>().find("lives on the opencl backend"),
            std::string::npos);
}
