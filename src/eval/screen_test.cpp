// Tests for static screening: real objects compiled with g++ (and nvcc where installed) from honest
// and adversarial sources, the example packages, and OpenCL #include rules.
#include "eval/screen.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "util/fs.h"

namespace kf {
namespace {

namespace fs = std::filesystem;

fs::path source_root() {
  const char* env = std::getenv("KF_SOURCE_DIR");
  return env ? fs::path(env) : fs::path(KF_TEST_SOURCE_DIR);
}

std::string find_nvcc() {
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (access(p, X_OK) == 0) return p;
  return "";
}

// A scratch directory per test, removed afterwards.
class ScreenTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("kf_screen_test_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }

  // Writes `text` to dir/name and compiles it to an object with `tool` (g++ or nvcc).
  fs::path compile(const std::string& name, const std::string& text,
                   std::vector<std::string> flags = {}, std::string tool = "g++") {
    fs::path src = dir_ / name;
    std::ofstream(src) << text;
    return compile_file(src, std::move(flags), std::move(tool));
  }
  fs::path compile_file(const fs::path& src, std::vector<std::string> flags = {},
                        std::string tool = "g++") {
    fs::path obj = dir_ / (src.filename().string() + ".o");
    ProcessSpec spec;
    spec.argv = {tool};
    if (tool == "g++") {
      spec.argv.insert(spec.argv.end(), {"-std=c++17", "-O3", "-march=native", "-fopenmp"});
    } else {
      spec.argv.insert(spec.argv.end(), {"-std=c++17", "-O3", "-lineinfo", "-arch=sm_90"});
    }
    spec.argv.insert(spec.argv.end(), flags.begin(), flags.end());
    spec.argv.insert(spec.argv.end(),
                     {"-I" + (source_root() / "include").string(), "-I/usr/local/cuda/include",
                      "-c", src.string(), "-o", obj.string()});
    spec.timeout_s = 300;
    ProcessResult r = runner_.run(spec);
    EXPECT_TRUE(r.success()) << src << ": " << r.describe() << "\n" << r.output;
    return obj;
  }

  // A stand-in for task.cpp: calls row_sums (the entry point) and the reference.
  fs::path task_object() {
    return compile("task.cpp",
                   "void row_sums(const float* x, float* y, long rows, long cols);\n"
                   "void row_sums_reference(const float* x, float* y, long rows, long cols);\n"
                   "int main(int argc, char**) { float x[4] = {}, y[2];\n"
                   "  (argc > 1 ? row_sums_reference : row_sums)(x, y, 2, 2);\n"
                   "  return int(y[0]); }\n");
  }

  ScreenResult screen_cpp(const std::string& candidate_text, std::vector<fs::path> reference = {}) {
    ScreenRequest req;
    req.language = Language::kCpp;
    req.task_objects = {task_object()};
    req.candidate_objects = {compile("candidate.cpp", candidate_text)};
    req.reference_objects = std::move(reference);
    req.work_dir = dir_;
    return screen_candidate(req, runner_);
  }

  fs::path dir_;
  PosixProcessRunner runner_;
};

constexpr const char* kSignature = "void row_sums(const float* x, float* y, long rows, long cols)";

std::string with_body(const std::string& prelude, const std::string& body) {
  return prelude + "\n" + kSignature + " {\n" + body +
         "\n  for (long r = 0; r < rows; ++r) { float s = 0; for (long c = 0; c < cols; ++c) "
         "s += x[r * cols + c]; y[r] = s; }\n}\n";
}

// ---- honest candidates --------------------------------------------------------------------

TEST_F(ScreenTest, HonestCppCandidatesPass) {
  const std::vector<std::string> honest = {
      // plain loop
      with_body("", ""),
      // OpenMP parallel for + simd
      std::string(kSignature) +
          " {\n#pragma omp parallel for schedule(static)\n"
          "  for (long r = 0; r < rows; ++r) { const float* row = x + r * cols; float s = 0;\n"
          "#pragma omp simd reduction(+ : s)\n"
          "    for (long c = 0; c < cols; ++c) s += row[c]; y[r] = s; } }\n",
      // templates, lambdas, std::vector/std::array, static helpers, anonymous namespaces, sort
      "#include <vector>\n#include <array>\n#include <algorithm>\n#include <cmath>\n"
      "#include <cstdio>\n#include <numeric>\n"
      "namespace { template <int N> float block_sum(const float* p) { float s = 0;\n"
      "  for (int i = 0; i < N; ++i) s += p[i]; return s; } }\n"
      "static float tail_sum(const float* p, long n) { return std::accumulate(p, p + n, 0.0f); }\n"
      "template <typename T> T twice(T v) { return v + v; }\n" +
          std::string(kSignature) +
          " {\n  std::vector<float> tmp(rows); std::array<float, 8> acc{};\n"
          "  auto row_sum = [&](long r) { const float* p = x + r * cols; long c = 0; float s = 0;\n"
          "    for (; c + 8 <= cols; c += 8) s += block_sum<8>(p + c);\n"
          "    return s + tail_sum(p + c, cols - c); };\n"
          "#pragma omp parallel for\n"
          "  for (long r = 0; r < rows; ++r) tmp[r] = row_sum(r);\n"
          "  std::copy(tmp.begin(), tmp.end(), y); acc[0] = twice(std::sqrt(acc[1]));\n"
          "  if (rows < 0) { std::sort(tmp.begin(), tmp.end()); printf(\"%f\\n\", acc[0]); }\n}\n",
      // iostream printing and exceptions from containers
      "#include <iostream>\n#include <vector>\n#include <stdexcept>\n" + std::string(kSignature) +
          " {\n  std::vector<double> acc(rows, 0.0);\n"
          "  for (long r = 0; r < rows; ++r) for (long c = 0; c < cols; ++c) acc.at(r) += x[r * "
          "cols + c];\n"
          "  for (long r = 0; r < rows; ++r) y[r] = float(acc[r]);\n"
          "  if (rows < 0) std::cout << \"rows \" << rows << std::endl;\n}\n",
  };
  for (const auto& text : honest) {
    ScreenResult r = screen_cpp(text);
    EXPECT_TRUE(r.ok) << r.reason << "\n" << r.log << "\n--- source:\n" << text;
    EXPECT_TRUE(r.environment_error.empty()) << r.environment_error;
  }
}

TEST_F(ScreenTest, HonestCandidatesPassWithTheLinkedLibrariesListed) {
  auto libs = link_libraries(Language::kCpp, runner_);
  ASSERT_GE(libs.size(), 3u) << "libc, libm, libstdc++ not found by g++ -print-file-name";
  ScreenRequest req;
  req.language = Language::kCpp;
  req.task_objects = {task_object()};
  req.library_files = libs;
  req.work_dir = dir_;
  req.candidate_objects = {compile(
      "candidate.cpp",
      "#include <vector>\n#include <string>\n#include <sstream>\n#include <cmath>\n" +
          std::string(kSignature) +
          " {\n  std::vector<float> v(cols); std::ostringstream o; o << rows;\n"
          "  for (long r = 0; r < rows; ++r) { float s = 0; for (long c = 0; c < cols; ++c) s += "
          "std::exp(std::log(x[r * cols + c] + 1.0f)) - 1.0f; y[r] = s; }\n"
          "  if (o.str().empty()) y[0] = v.size(); }\n")};
  ScreenResult r = screen_candidate(req, runner_);
  EXPECT_TRUE(r.ok) << r.reason << "\n" << r.log;
}

// ---- violations ---------------------------------------------------------------------------

struct Attack {
  std::string label;
  std::string text;
  std::string symbol;  // expected in the reason
};

TEST_F(ScreenTest, EachViolationClassIsRefusedNamingTheSymbol) {
  const std::vector<Attack> attacks = {
      {"defines clock_gettime",
       "extern \"C\" int clock_gettime(int, void* t) { return t ? 0 : 1; }\n" + with_body("", ""),
       "clock_gettime"},
      {"weak clock_gettime",
       "extern \"C\" __attribute__((weak)) int clock_gettime(int, void* t) { return t ? 0 : 1; "
       "}\n" +
           with_body("", ""),
       "clock_gettime"},
      {"defines kernelfoundry::compare",
       "namespace kernelfoundry { bool compare(const float* a, long n) { return a || n; } }\n" +
           with_body("", ""),
       "kernelfoundry::compare"},
      {"defines steady_clock::now",
       "#include <chrono>\nstd::chrono::steady_clock::time_point "
       "std::chrono::steady_clock::now() noexcept { return time_point(); }\n" +
           with_body("", ""),
       "steady_clock::now"},
      {"atexit", with_body("#include <cstdlib>\nstatic void later() {}", "std::atexit(later);"),
       "atexit"},
      {"std::thread",
       with_body("#include <thread>", "std::thread t([=] { y[0] = 1; }); t.detach();"),
       "std::thread"},
      {"fopen",
       with_body("#include <cstdio>",
                 "FILE* f = std::fopen(\"memo.bin\", \"rb\"); if (f) std::fclose(f);"),
       "fopen"},
      {"getenv", with_body("#include <cstdlib>", "if (std::getenv(\"HOME\")) y[0] = 0;"), "getenv"},
      {"system", with_body("#include <cstdlib>", "if (rows < 0) std::system(\"true\");"), "system"},
      {"kill(getppid())",
       with_body("#include <signal.h>\n#include <unistd.h>", "if (rows < 0) kill(getppid(), 9);"),
       "kill"},
      {"dlopen", with_body("#include <dlfcn.h>", "if (rows < 0) dlopen(\"libc.so.6\", RTLD_NOW);"),
       "dlopen"},
      {"inline asm syscall",
       with_body("",
                 "if (rows < 0) { long ret; asm volatile(\"syscall\" : \"=a\"(ret) : "
                 "\"a\"(39L) : \"rcx\", \"r11\", \"memory\"); y[0] = ret; }"),
       "syscall"},
      {"static local with destructor",
       with_body("#include <vector>",
                 "static std::vector<float> memo; memo.assign(x, x + rows * cols);"),
       "__cxa_atexit"},
      {"global helper with external linkage",
       "float helper_sum(const float* p, long n) { float s = 0; for (long i = 0; i < n; ++i) s "
       "+= p[i]; return s; }\n" +
           std::string(kSignature) +
           " { for (long r = 0; r < rows; ++r) y[r] = helper_sum(x + r * cols, cols); }\n",
       "helper_sum"},
      {"reads a clock", with_body("#include <ctime>", "if (std::time(nullptr) < 0) y[0] = 0;"),
       "time"},
      {"omp_get_wtime", with_body("#include <omp.h>", "if (omp_get_wtime() < 0) y[0] = 0;"),
       "omp_get_wtime"},
  };
  for (const auto& attack : attacks) {
    ScreenResult r = screen_cpp(attack.text);
    EXPECT_FALSE(r.ok) << attack.label << ": passed\n" << r.log;
    EXPECT_TRUE(r.environment_error.empty()) << attack.label << ": " << r.environment_error;
    // The reason names the first violation (nm lists symbols by name); some violation names
    // the expected symbol, and the log shows it.
    bool named = false;
    for (const auto& v : r.violations)
      named = named || v.summary.find(attack.symbol) != std::string::npos;
    EXPECT_TRUE(named) << attack.label << ": no violation names " << attack.symbol << ":\n"
                       << r.log;
    EXPECT_NE(r.reason.find(r.violations.empty() ? "?" : r.violations[0].summary),
              std::string::npos)
        << r.reason;
    EXPECT_NE(r.log.find(attack.symbol), std::string::npos) << attack.label << ": " << r.log;
    if (std::getenv("KF_SCREEN_TEST_PRINT"))
      std::printf("%s\n%s\n", r.reason.c_str(), r.log.c_str());
  }
}

TEST_F(ScreenTest, MessagesSayWhatToDoInstead) {
  ScreenResult r =
      screen_cpp("extern \"C\" int clock_gettime(int, void* t) { return 0; }\n" +
                 with_body("#include <vector>", "static std::vector<float> memo; memo.resize(1);"));
  ASSERT_FALSE(r.ok);
  EXPECT_NE(r.log.find("A candidate may define only the task's entry points (row_sums)"),
            std::string::npos)
      << r.log;
  EXPECT_NE(r.log.find("anonymous namespace"), std::string::npos) << r.log;
  EXPECT_NE(r.log.find("static objects with destructors"), std::string::npos) << r.log;
  EXPECT_NE(r.reason.find("and 1 more"), std::string::npos) << r.reason;
}

TEST_F(ScreenTest, WeakDefinitionOfALibraryFunctionIsRefusedThroughTheLibraryList) {
  // A C++ name that no built-in rule knows: only the library's own symbol table catches it.
  ScreenRequest req;
  req.language = Language::kCpp;
  req.task_objects = {task_object()};
  req.library_files = link_libraries(Language::kCpp, runner_);
  req.work_dir = dir_;
  req.candidate_objects = {compile("candidate.cpp",
                                   "#include <new>\nnamespace std { __attribute__((weak)) void "
                                   "__throw_bad_alloc() { for (;;) {} } }\n" +
                                       with_body("", ""))};
  ScreenResult r = screen_candidate(req, runner_);
  EXPECT_FALSE(r.ok) << r.log;
  EXPECT_NE(r.reason.find("std::__throw_bad_alloc"), std::string::npos) << r.reason;
}

TEST_F(ScreenTest, CallingOrDefiningTheReferenceIsRefused) {
  fs::path reference =
      compile("reference.cpp",
              "void row_sums_reference(const float* x, float* y, long rows, "
              "long cols) { for (long r = 0; r < rows; ++r) y[r] = x[r * cols]; }\n");
  ScreenResult calls =
      screen_cpp("void row_sums_reference(const float* x, float* y, long rows, long cols);\n" +
                     std::string(kSignature) + " { row_sums_reference(x, y, rows, cols); }\n",
                 {reference});
  EXPECT_FALSE(calls.ok);
  EXPECT_NE(calls.reason.find("row_sums_reference"), std::string::npos) << calls.reason;
  EXPECT_NE(calls.reason.find("reference"), std::string::npos) << calls.reason;

  ScreenResult defines = screen_cpp(
      "void row_sums_reference(const float* x, float* y, long rows, long cols) { y[0] = x[0]; }\n" +
          with_body("", ""),
      {reference});
  EXPECT_FALSE(defines.ok);
  EXPECT_NE(defines.reason.find("defines row_sums_reference"), std::string::npos) << defines.reason;
}

TEST_F(ScreenTest, MissingToolsAreAnEnvironmentFaultNotTheCandidates) {
  ScreenRequest req;
  req.language = Language::kCpp;
  req.candidate_objects = {compile("candidate.cpp", with_body("", ""))};
  req.work_dir = dir_;
  std::string path = std::getenv("PATH");
  setenv("PATH", (dir_ / "empty").c_str(), 1);
  ScreenResult r = screen_candidate(req, runner_);
  setenv("PATH", path.c_str(), 1);
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.environment_error.find("nm"), std::string::npos) << r.environment_error;
  EXPECT_TRUE(r.violations.empty());

  // A tool that fails to run (here: scripted) is the machine's fault as well.
  FakeProcessRunner fake([](const ProcessSpec&) {
    return FakeProcessRunner::exited(1, "nm: candidate.o: file format not recognized");
  });
  ScreenResult failed = screen_candidate(req, fake);
  EXPECT_FALSE(failed.ok);
  EXPECT_NE(failed.environment_error.find("file format not recognized"), std::string::npos)
      << failed.environment_error;
}

TEST_F(ScreenTest, LogIsBounded) {
  std::string text;
  for (int i = 0; i < 30; ++i)
    text += "float helper_" + std::to_string(i) + "(float v) { return v + " + std::to_string(i) +
            "; }\n";
  ScreenResult r = screen_cpp(text + with_body("", ""));
  ASSERT_FALSE(r.ok);
  EXPECT_EQ(r.violations.size(), 30u);
  EXPECT_NE(r.log.find("and 10 more violation(s) not shown"), std::string::npos) << r.log;
}

// ---- CUDA -----------------------------------------------------------------------------------

TEST_F(ScreenTest, CudaKernelsPassAndPrivateStreamsAreRefused) {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not installed";
  fs::path task = compile("task.cpp",
                          "void launch(const float* x, float* y, int n);\n"
                          "int main() { launch(nullptr, nullptr, 0); }\n");
  const std::string honest =
      "#include <cuda_runtime.h>\n"
      "template <int kBlock> __global__ void block_sum(const float* x, float* y, int n) {\n"
      "  __shared__ float s[kBlock]; int i = blockIdx.x * kBlock + threadIdx.x;\n"
      "  s[threadIdx.x] = i < n ? x[i] : 0.f; __syncthreads();\n"
      "  for (int k = kBlock / 2; k > 0; k /= 2) { if (threadIdx.x < k) s[threadIdx.x] += "
      "s[threadIdx.x + k]; __syncthreads(); }\n"
      "  if (threadIdx.x == 0) atomicAdd(y, s[0]); }\n"
      "__global__ void scale(float* y, float f) { y[0] *= f; }\n"
      "namespace { __global__ void clear(float* y) { y[0] = 0; } }\n"
      "void launch(const float* x, float* y, int n) {\n"
      "  clear<<<1, 1>>>(y); cudaMemsetAsync(y, 0, sizeof(float));\n"
      "  block_sum<256><<<(n + 255) / 256, 256>>>(x, y, n); scale<<<1, 1>>>(y, 1.f);\n"
      "  cudaGetLastError(); }\n";
  ScreenRequest req;
  req.language = Language::kCuda;
  req.task_objects = {task};
  req.work_dir = dir_;
  req.candidate_objects = {compile("honest.cu", honest, {}, nvcc)};
  ScreenResult ok = screen_candidate(req, runner_);
  EXPECT_TRUE(ok.ok) << ok.reason << "\n" << ok.log;

  const std::vector<Attack> attacks = {
      {"cudaStreamCreate",
       "#include <cuda_runtime.h>\n__global__ void k(float* y) { y[0] = 1; }\n"
       "void launch(const float*, float* y, int) { cudaStream_t s; cudaStreamCreate(&s);\n"
       "  k<<<1, 1, 0, s>>>(y); }\n",
       "cudaStreamCreate"},
      {"cudaEventRecord",
       "#include <cuda_runtime.h>\n__global__ void k(float* y) { y[0] = 1; }\n"
       "void launch(const float*, float* y, int) { cudaEvent_t e; cudaEventCreate(&e);\n"
       "  k<<<1, 1>>>(y); cudaEventRecord(e); }\n",
       "cudaEvent"},
      {"host thread launching later",
       "#include <cuda_runtime.h>\n#include <thread>\n__global__ void k(float* y) { y[0] = 1; }\n"
       "void launch(const float*, float* y, int) { std::thread([y] { k<<<1, 1>>>(y); }).detach(); "
       "}\n",
       "std::thread"},
      {"atexit outside registration",
       "#include <cuda_runtime.h>\n#include <cstdlib>\n__global__ void k(float* y) { y[0] = 1; }\n"
       "static void later() {}\n"
       "void launch(const float*, float* y, int) { std::atexit(later); k<<<1, 1>>>(y); }\n",
       "atexit"},
  };
  for (const auto& attack : attacks) {
    req.candidate_objects = {compile("attack.cu", attack.text, {}, nvcc)};
    ScreenResult r = screen_candidate(req, runner_);
    EXPECT_FALSE(r.ok) << attack.label << ": passed\n" << r.log;
    EXPECT_NE(r.reason.find(attack.symbol), std::string::npos) << attack.label << ": " << r.reason;
  }
}

// ---- example packages -----------------------------------------------------------------------

TEST_F(ScreenTest, ExampleCppPackagesPass) {
  fs::path tasks = source_root() / "examples" / "tasks";
  for (auto [pkg, file] : std::vector<std::pair<std::string, std::string>>{
           {"reduction_cpp", "reduce.cpp"}, {"box_blur_cpp", "blur.cpp"}}) {
    fs::path dir = tasks / pkg;
    ScreenRequest req;
    req.language = Language::kCpp;
    req.task_objects = {compile_file(dir / "task.cpp", {"-I" + dir.string()})};
    req.reference_objects = {compile_file(dir / "reference.cpp", {"-I" + dir.string()})};
    req.candidate_objects = {compile_file(dir / file, {"-I" + dir.string()})};
    req.library_files = link_libraries(Language::kCpp, runner_);
    req.work_dir = dir_;
    ScreenResult r = screen_candidate(req, runner_);
    EXPECT_TRUE(r.ok) << pkg << ": " << r.reason << "\n" << r.log;
  }
}

TEST_F(ScreenTest, ExampleCudaPackagesPass) {
  std::string nvcc = find_nvcc();
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not installed";
  fs::path tasks = source_root() / "examples" / "tasks";
  for (auto [pkg, file] : std::vector<std::pair<std::string, std::string>>{
           {"matmul_cuda", "matmul.cu"}, {"softmax_cuda", "softmax.cu"}}) {
    fs::path dir = tasks / pkg;
    ScreenRequest req;
    req.language = Language::kCuda;
    req.task_objects = {compile_file(dir / "task.cpp", {"-I" + dir.string()})};
    req.reference_objects = {compile_file(dir / "reference.cu", {"-I" + dir.string()}, nvcc)};
    req.candidate_objects = {compile_file(dir / file, {"-I" + dir.string()}, nvcc)};
    req.library_files = link_libraries(Language::kCuda, runner_);
    req.work_dir = dir_;
    ScreenResult r = screen_candidate(req, runner_);
    EXPECT_TRUE(r.ok) << pkg << ": " << r.reason << "\n" << r.log;
  }
}

// ---- OpenCL C -------------------------------------------------------------------------------

TEST(ScreenOpenCl, ExampleKernelPassesAndReferenceIncludeFails) {
  fs::path dir = source_root() / "examples" / "tasks" / "softmax_ocl";
  auto text = read_file(dir / "softmax.cl");
  ASSERT_TRUE(text.is_ok()) << text.message();
  // The lead passes the package's files without the reference's.
  std::vector<std::string> package = {"softmax.cl", "task.cpp", "config.yaml", "common.h"};
  ScreenRequest req;
  req.language = Language::kOcl;
  req.opencl_sources = {{"softmax.cl", *text}};
  req.package_files = package;
  FakeProcessRunner fake;  // no objects: no tool may run
  ScreenResult ok = screen_candidate(req, fake);
  EXPECT_TRUE(ok.ok) << ok.log;
  EXPECT_EQ(fake.calls(), 0u);

  req.opencl_sources = {
      {"softmax.cl", "#include \"common.h\"\n#include \"reference.cl\"\n" + *text}};
  ScreenResult bad = screen_candidate(req, fake);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.reason.find("softmax.cl:2 includes \"reference.cl\""), std::string::npos)
      << bad.reason;
  EXPECT_NE(bad.log.find("not a file of the candidate's package"), std::string::npos) << bad.log;
}

TEST(ScreenOpenCl, IncludeFormsAreCheckedWithLineNumbers) {
  std::vector<std::string> package = {"kernels/softmax.cl", "kernels/common.h", "util.h"};
  auto lines_of = [&](const std::string& text) {
    std::vector<std::string> out;
    for (const auto& v : screen_opencl_includes("kernels/softmax.cl", text, package))
      out.push_back(v.summary);
    return out;
  };
  // Allowed: relative to the file, relative to the package root; includes in comments ignored.
  EXPECT_TRUE(lines_of("#include \"common.h\"\n  #  include \"util.h\"\n"
                       "// #include \"/etc/passwd\"\n/* #include <stdio.h>\n */\n")
                  .empty());
  auto found = lines_of(
      "#include <stdio.h>\n"                        // 1
      "#include \"/work/.env\"\n"                   // 2
      "#include \"../../.env\"\n"                   // 3
      "#define F \"x.h\"\n#include F\n"             // 4, 5
      "%:include \"reference.cl\"\n"                // 6
      "#if __has_include(\"../secret\")\n#endif\n"  // 7
      "#include \\\n  \"reference.cl\"\n"           // 9 (continued)
      "?\?=include \"reference.cl\"\n");            // 11: a trigraph `#`
  ASSERT_EQ(found.size(), 8u) << testing::PrintToString(found);
  EXPECT_EQ(found[0], "kernels/softmax.cl:1 includes <stdio.h>");
  EXPECT_EQ(found[1], "kernels/softmax.cl:2 includes \"/work/.env\"");
  EXPECT_EQ(found[2], "kernels/softmax.cl:3 includes \"../../.env\"");
  EXPECT_EQ(found[3], "kernels/softmax.cl:5 includes F");
  EXPECT_EQ(found[4], "kernels/softmax.cl:6 includes \"reference.cl\"");
  EXPECT_EQ(found[5], "kernels/softmax.cl:7 includes \"../secret\"");
  EXPECT_EQ(found[6], "kernels/softmax.cl:9 includes \"reference.cl\"");
  EXPECT_EQ(found[7], "kernels/softmax.cl:11 includes \"reference.cl\"");
}

TEST(ScreenOpenCl, InlineAssemblyIsRefusedWhereverItIsNamed) {
  auto lines_of = [](const std::string& text) {
    std::vector<std::string> out;
    for (const auto& v : screen_opencl_assembly("softmax.cl", text)) out.push_back(v.summary);
    return out;
  };
  // Comments, literals and longer names are not inline assembly.
  EXPECT_TRUE(lines_of("// asm(\"rdtsc\")\n/* __asm__ */\nconstant char* s = \"asm\";\n"
                       "char q = '\\'', r = 'a'; int asm_count, my__asm__, x_asm;\n")
                  .empty());
  auto found = lines_of(
      "__asm__ volatile(\"rdtsc\");\n"          // 1
      "void f() { asm(\"nop\"); }\n"            // 2
      "#undef __asm\n"                          // 3
      "int y = 1; __as\\\nm__(\"syscall\");\n"  // 4 (continued onto 5)
      "char c = '\"'; asm(\"\");\n"             // 6: after a quote in a character literal
      "#undef __as?\?/\nm__\n");                // 7: a trigraph continuation (onto 8)
  ASSERT_EQ(found.size(), 6u) << testing::PrintToString(found);
  EXPECT_EQ(found[0], "softmax.cl:1 uses inline assembly (__asm__)");
  EXPECT_EQ(found[1], "softmax.cl:2 uses inline assembly (asm)");
  EXPECT_EQ(found[2], "softmax.cl:3 uses inline assembly (__asm)");
  EXPECT_EQ(found[3], "softmax.cl:4 uses inline assembly (__asm__)");
  EXPECT_EQ(found[4], "softmax.cl:6 uses inline assembly (asm)");
  EXPECT_EQ(found[5], "softmax.cl:7 uses inline assembly (__asm__)");

  // Through screen_candidate: verdict-1 text naming the line and the fix.
  ScreenRequest req;
  req.language = Language::kOcl;
  req.opencl_sources = {{"softmax.cl", "kernel void k() {}\n__asm__(\"syscall\");\n"}};
  req.package_files = {"softmax.cl"};
  FakeProcessRunner fake;
  ScreenResult bad = screen_candidate(req, fake);
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.reason.find("softmax.cl:2 uses inline assembly (__asm__)"), std::string::npos)
      << bad.reason;
  EXPECT_NE(bad.log.find("write the kernel in OpenCL C"), std::string::npos) << bad.log;

  // An EVOLVE file compiled as host code is checked for the names too: an OpenCL build could
  // include it, and a `#undef` there would undo the build options that catch a pasted name.
  req.opencl_sources = {{"softmax.cl", "#include \"launch.h\"\nkernel void k() {}\n"}};
  req.host_evolve_sources = {{"launch.h", "#undef __asm__\n"}};
  req.package_files = {"softmax.cl", "launch.h"};
  ScreenResult header = screen_candidate(req, fake);
  EXPECT_FALSE(header.ok);
  EXPECT_NE(header.reason.find("launch.h:1 uses inline assembly (__asm__)"), std::string::npos)
      << header.reason;
}

}  // namespace
}  // namespace kf
