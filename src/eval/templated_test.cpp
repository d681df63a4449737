// Reading templated kernels' dispatchers, as models write them, and the generated entry point.
#include "eval/templated.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "util/fs.h"

namespace kf {
namespace {

TemplatedKernel parse_ok(const std::string& code) {
  auto parsed = parse_templated(code);
  EXPECT_TRUE(parsed.is_ok()) << parsed.message();
  if (!parsed.is_ok() || !parsed->has_value()) {
    ADD_FAILURE() << "not read as a templated kernel";
    return {};
  }
  return **parsed;
}

std::vector<std::string> labels(const TemplatedKernel& k) {
  std::vector<std::string> out;
  for (const auto& c : k.combinations) out.push_back(combination_label(k, c));
  return out;
}

// The shipped CPP worked example (configs/prompts/templated_cpp.md), as the model copies it.
const char* kCppExample = R"(#include <algorithm>
#include <stdexcept>

template <int kChunk, int kUnroll>
void forward_templated(const float* x, float* y, float alpha, int n) {
#pragma omp parallel for schedule(static)
  for (int start = 0; start < n; start += kChunk) {
    int end = std::min(n, start + kChunk);
    for (int i = start; i < end; ++i) y[i] = alpha * x[i];
  }
}

void forward(const float* x, float* y, float alpha, int n, int chunk, int unroll) {
  if (chunk == 4096 && unroll == 8) return forward_templated<4096, 8>(x, y, alpha, n);
  if (chunk == 4096 && unroll == 16) return forward_templated<4096, 16>(x, y, alpha, n);
  if (chunk == 16384 && unroll == 8) return forward_templated<16384, 8>(x, y, alpha, n);
  if (chunk == 16384 && unroll == 16) return forward_templated<16384, 16>(x, y, alpha, n);
  throw std::invalid_argument("forward: no instantiation for these parameters");
}
)";

TEST(Templated, ReadsTheShippedExample) {
  TemplatedKernel k = parse_ok(kCppExample);
  EXPECT_EQ(k.name, "forward");
  EXPECT_EQ(k.return_type, "void");
  EXPECT_EQ(k.num_tuning, 2u);
  EXPECT_EQ(k.tuning_names(), (std::vector<std::string>{"chunk", "unroll"}));
  EXPECT_EQ(labels(k),
            (std::vector<std::string>{"chunk=4096, unroll=8", "chunk=4096, unroll=16",
                                      "chunk=16384, unroll=8", "chunk=16384, unroll=16"}));
  EXPECT_EQ(k.combinations[1].instantiation, "forward_templated<4096, 16>");
  EXPECT_EQ(combination_params(k, k.combinations[2]),
            nlohmann::json({{"chunk", 16384}, {"unroll", 8}}));
  EXPECT_EQ(k.includes, (std::vector<std::string>{"#include <algorithm>", "#include <stdexcept>"}));
}

TEST(Templated, CodeWithoutInstantiationsIsNotTemplated) {
  auto parsed = parse_templated(
      "void forward(const float* x, float* y, int n) { y[0] = x[0]; }\n"
      "// forward_templated<1, 2>(x, y, n) in a comment\n"
      "const char* s = \"forward_templated<3>(\";\n");
  ASSERT_TRUE(parsed.is_ok()) << parsed.message();
  EXPECT_FALSE(parsed->has_value());
}

TEST(Templated, SpacingNamespacesAndCommentsDoNotMatter) {
  TemplatedKernel k = parse_ok(R"(
namespace kern { namespace detail {
template<int TILE,int VEC> __global__ void body(float*p){}
template<int TILE,int VEC>
void forward_templated(float *p, int n) { body<TILE,VEC><<<1,TILE>>>(p); }
} // namespace detail

/* The dispatcher: one line per combination.
   if (tile == 99) return forward_templated<99, 9>(p, n);   (not code) */
inline void launch(float* p,
                   int n,
                   int tile = 64,   // threads
                   int vec = 4) {
  if(tile==32&&vec==1)     return detail::forward_templated< 32 , 1 >(p, n);
  else if (  tile == 32 &&  vec == 4 ) return detail :: forward_templated<32,4>(p,n);
  else if (tile == 64 && vec == 4)
    return ::kern::detail::forward_templated<64, 4>(p, n);  // the default
  throw 1;
}
}  // namespace kern
)");
  EXPECT_EQ(k.name, "launch");
  EXPECT_EQ(k.scopes, (std::vector<std::string>{"namespace kern"}));
  EXPECT_EQ(k.params, (std::vector<std::string>{"float* p", "int n", "int tile", "int vec"}));
  EXPECT_EQ(labels(k),
            (std::vector<std::string>{"tile=32, vec=1", "tile=32, vec=4", "tile=64, vec=4"}));
}

TEST(Templated, ConditionsWinOverArgumentOrder) {
  // The template arguments in another order than the dispatcher's parameters.
  TemplatedKernel k = parse_ok(R"(
template <int kItems, int kThreads> void forward_templated(const float* x, int n) {}
void run(const float* x, int n, int threads, int items) {
  if (items == 1 && threads == 128) return forward_templated<1, 128>(x, n);
  if (threads == 256 && items == 4) return forward_templated<4, 256>(x, n);
}
)");
  EXPECT_EQ(labels(k), (std::vector<std::string>{"threads=128, items=1", "threads=256, items=4"}));
}

TEST(Templated, BoolAndTypeParametersThroughSwitches) {
  TemplatedKernel k = parse_ok(R"(
#include <cstdint>
template <typename Acc, int kTile, bool kUnroll>
void forward_templated(const float* x, float* y, long n) {}

void row_sums(const float* x, float* y, long n, int acc, int tile, bool unroll) {
  switch (acc) {
    case 0:  // float accumulators
      switch (tile) {
        case 16: return forward_templated<float, 16, true>(x, y, n);
        case 0x20: return forward_templated<float, 32, false>(x, y, n);
      }
      break;
    case 1: {
      if (tile == 64 && !unroll) return forward_templated<double, 64, false>(x, y, n);
      if (tile == 64 && unroll) return forward_templated<double, 64, true>(x, y, n);
      break;
    }
  }
}
)");
  EXPECT_EQ(labels(k), (std::vector<std::string>{
                           "acc=0, tile=16, unroll=true", "acc=0, tile=32, unroll=false",
                           "acc=1, tile=64, unroll=false", "acc=1, tile=64, unroll=true"}));
  EXPECT_EQ(combination_params(k, k.combinations[0]),
            nlohmann::json({{"acc", 0}, {"tile", 16}, {"unroll", true}}));
}

TEST(Templated, NestedIfsKeepTheOuterCondition) {
  TemplatedKernel k = parse_ok(R"(
template <int A, int B> void forward_templated(int* p) {}
void go(int* p, int a, int b) {
  if (a == 8) {
    if (b == 1) return forward_templated<8, 1>(p);
    if (b == 2) return forward_templated<8, 2>(p);
  }
  if (a == 16) {
    if (b == 1) forward_templated<16, 1>(p);
    else forward_templated<16, 2>(p);
  }
}
)");
  EXPECT_EQ(labels(k),
            (std::vector<std::string>{"a=8, b=1", "a=8, b=2", "a=16, b=1", "a=16, b=2"}));
}

TEST(Templated, SyclDispatcherWithAQueue) {
  TemplatedKernel k = parse_ok(R"(#include <sycl/sycl.hpp>
template <int kGroup, int kItems>
void forward_templated(sycl::queue& q, const float* x, float* y, float alpha, int n) {
  q.parallel_for(sycl::nd_range<1>(kGroup, kGroup), [=](sycl::nd_item<1> it) {});
}
void forward(sycl::queue& q, const float* x, float* y, float alpha, int n, int group, int items) {
  if (group == 128 && items == 1) return forward_templated<128, 1>(q, x, y, alpha, n);
  if (group == 256 && items == 4) return forward_templated<256, 4>(q, x, y, alpha, n);
}
)");
  EXPECT_EQ(k.params.front(), "sycl::queue& q");
  EXPECT_EQ(labels(k), (std::vector<std::string>{"group=128, items=1", "group=256, items=4"}));
}

TEST(Templated, UnreadableValuesAreErrorsNamingTheInstantiation) {
  auto parsed = parse_templated(R"(
template <int A> void forward_templated(int* p) {}
constexpr int kBig = 64;
void go(int* p, int a) {
  if (a > 8) return forward_templated<kBig>(p);
}
)");
  ASSERT_FALSE(parsed.is_ok());
  EXPECT_NE(parsed.message().find("forward_templated<kBig>"), std::string::npos)
      << parsed.message();
  EXPECT_NE(parsed.message().find("a == 128"), std::string::npos) << parsed.message();
}

TEST(Templated, DispatcherMistakesAreErrors) {
  // Too few parameters: the entry point's own are missing.
  auto few = parse_templated(
      "template <int A, int B> void forward_templated(int* p) {}\n"
      "void go(int a) { if (a == 1) forward_templated<1, 2>(nullptr); }\n");
  ASSERT_FALSE(few.is_ok());
  EXPECT_NE(few.message().find("one int per template parameter"), std::string::npos);
  auto mixed = parse_templated(
      "template <int A> void forward_templated(int* p) {}\n"
      "void go(int* p, int a) { if (a == 1) forward_templated<1>(p); "
      "if (a == 2) forward_templated<2, 3>(p); }\n");
  ASSERT_FALSE(mixed.is_ok());
  EXPECT_NE(mixed.message().find("forward_templated<2, 3>"), std::string::npos);
  auto stat = parse_templated(
      "template <int A> void forward_templated(int* p) {}\n"
      "static void go(int* p, int a) { if (a == 1) forward_templated<1>(p); }\n");
  ASSERT_FALSE(stat.is_ok());
  EXPECT_NE(stat.message().find("must not be static"), std::string::npos);
}

TEST(Templated, DuplicateCombinationsAreListedOnce) {
  TemplatedKernel k = parse_ok(
      "template <int A> void forward_templated(int* p) {}\n"
      "void go(int* p, int a) {\n"
      "  if (a == 1) return forward_templated<1>(p);\n"
      "  if (a == 1) return forward_templated<1>(p);\n"
      "  return forward_templated<2>(p);\n"
      "}\n");
  EXPECT_EQ(labels(k), (std::vector<std::string>{"a=1", "a=2"}));
}

// Each combination is a full evaluation and one more draw of a noisy measurement: a dispatcher
// may list kMaxTemplateCombinations, not one more.
TEST(Templated, AtMostSixtyFourCombinations) {
  auto dispatcher = [](size_t n) {
    std::string code =
        "template <int A> void forward_templated(int* p) {}\nvoid go(int* p, int a) {\n";
    for (size_t i = 1; i <= n; ++i)
      code += "  if (a == " + std::to_string(i) + ") return forward_templated<" +
              std::to_string(i) + ">(p);\n";
    return code + "}\n";
  };
  EXPECT_EQ(parse_ok(dispatcher(kMaxTemplateCombinations)).combinations.size(),
            kMaxTemplateCombinations);
  auto over = parse_templated(dispatcher(kMaxTemplateCombinations + 1));
  ASSERT_FALSE(over.is_ok());
  EXPECT_NE(over.message().find("lists 65 combinations; at most 64 are evaluated"),
            std::string::npos)
      << over.message();
}

TEST(Templated, GeneratedEntryCallsTheDispatcherWithTheRunsParameters) {
  TemplatedKernel k = parse_ok(R"(#include "reduce.h"
namespace fast {
template <int kRows, bool kSimd> void forward_templated(const float* x, float* y, long rows) {}
float* row_sums(const float* x, float* y, long rows, int block_rows, bool simd = true) {
  if (block_rows == 4 && simd) { forward_templated<4, true>(x, y, rows); return y; }
  if (block_rows == 8 && !simd) { forward_templated<8, false>(x, y, rows); return y; }
  return nullptr;
}
}
)");
  EXPECT_EQ(templated_entry_file(Language::kCpp), "kf_templated_entry.cpp");
  EXPECT_EQ(templated_entry_file(Language::kCuda), "kf_templated_entry.cu");
  std::string src = templated_entry_source(k, k.combinations[1]);
  EXPECT_NE(src.find("#include \"reduce.h\"\n"), std::string::npos) << src;
  EXPECT_NE(src.find("long long template_param(const char* name, long long fallback);"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("namespace fast {\n"), std::string::npos) << src;
  EXPECT_NE(src.find("float* row_sums(const float* x, float* y, long rows, int block_rows, bool "
                     "simd);"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("float* row_sums(const float* x, float* y, long rows) {\n"
                     "  return row_sums(x, y, rows,"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("kernelfoundry::template_param(\"block_rows\", 8)"), std::string::npos) << src;
  EXPECT_NE(src.find("kernelfoundry::template_param(\"simd\", 0)"), std::string::npos) << src;
  EXPECT_NE(src.find("}  // namespace fast"), std::string::npos) << src;
}

TEST(Templated, FoundInTheChangedEvolveFileAndItsEntryGoesBesideIt) {
  TaskPackage task;
  task.files = {{"kernels/k.cl", "__kernel void k() {}\n"},
                {"kernels/k.cpp", "void f(int* p) {}\n"}};
  Block cl, cpp;
  cl.file = "kernels/k.cl";
  cpp.file = "kernels/k.cpp";
  task.blocks = {cl, cpp};
  auto none = find_templated(task, {});
  ASSERT_TRUE(none.is_ok()) << none.message();
  EXPECT_FALSE(none->has_value());
  std::string code =
      "template <int A> void forward_templated(int* p) {}\n"
      "void f(int* p, int a) { if (a == 4) forward_templated<4>(p); }\n";
  // OpenCL C is never read as a dispatcher; the C++ file is.
  auto found = find_templated(task, {{"kernels/k.cl", code}, {"kernels/k.cpp", code}});
  ASSERT_TRUE(found.is_ok()) << found.message();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->file, "kernels/k.cpp");
  EXPECT_EQ(templated_entry_path(**found, Language::kCpp), "kernels/kf_templated_entry.cpp");
  EXPECT_TRUE(is_templated_entry_file("kernels/kf_templated_entry.cu"));
  EXPECT_FALSE(is_templated_entry_file("kernels/entry.cpp"));
  auto broken = find_templated(task, {{"kernels/k.cpp",
                                       "template <int A> void forward_templated() "
                                       "{}\nvoid f(int a) { forward_templated<1>(); }\n"}});
  ASSERT_FALSE(broken.is_ok());
  EXPECT_EQ(broken.message().rfind("kernels/k.cpp: templated kernel: ", 0), 0u) << broken.message();
}

TEST(Templated, ResultsTextIsOneLinePerCombination) {
  nlohmann::json results = nlohmann::json::array(
      {{{"label", "a=1"}, {"verdict", 5}, {"speedup", 1.5}, {"chosen", true}, {"reason", "ok"}},
       {{"label", "a=2"},
        {"verdict", 4},
        {"speedup", nullptr},
        {"reason", "output 'y': " + std::string(300, 'x')}}});
  std::string text = template_results_text(results);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "- a=1: correct, speedup 1.500x (chosen: the kernel's result)");
  EXPECT_NE(text.find("\n- a=2: wrong values: output 'y': xxx"), std::string::npos) << text;
  EXPECT_LT(text.size(), 320u) << "long reasons are cut";
  results[0]["confirmed_verdict"] = 5;
  results[0]["confirmed_speedup"] = 1.25;
  std::string confirmed = template_results_text(results);
  EXPECT_EQ(confirmed.substr(0, confirmed.find('\n')),
            "- a=1: correct, speedup 1.500x (chosen; its confirming run, the kernel's result: "
            "1.250x)");
  results[0]["confirmed_verdict"] = 4;
  results[0]["confirmed_speedup"] = nullptr;
  std::string failed = template_results_text(results);
  EXPECT_EQ(failed.substr(0, failed.find('\n')),
            "- a=1: correct, speedup 1.500x (chosen; its confirming run failed)");
  EXPECT_EQ(template_results_text(nullptr), "");
  EXPECT_EQ(template_results_text(nlohmann::json::array()), "");
}

TEST(Templated, ResultsTextSaysWhichCombinationsWereOnlyTimedBriefly) {
  nlohmann::json results = nlohmann::json::array(
      {{{"label", "a=1"}, {"verdict", 5}, {"speedup", 0.8}, {"timing", "short"}},
       {{"label", "a=2"}, {"verdict", 4}, {"reason", "wrong"}, {"timing", "short"}},
       {{"label", "a=3"}, {"verdict", 5}, {"speedup", 1.2}, {"timing", "full"}},
       {{"label", "a=4"}, {"timing", "not run"}}});
  EXPECT_EQ(template_results_text(results),
            "- a=1: correct, speedup 0.800x (short timing only)\n"
            "- a=2: wrong values: wrong\n"
            "- a=3: correct, speedup 1.200x\n"
            "- a=4: not run");
}

// CUDA, build only (no GPU needed): a templated matmul candidate spliced into the example's
// matmul.cu, with the generated entry point, compiles and links under nvcc against a caller of
// the task's unchanged entry point.
TEST(TemplatedCuda, MatmulCandidateAndEntryPointBuildWithNvcc) {
  std::string nvcc;
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (nvcc.empty() && access(p, X_OK) == 0) nvcc = p;
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not installed";
  namespace fs = std::filesystem;
  const char* env = std::getenv("KF_SOURCE_DIR");
  fs::path root = env ? fs::path(env) : fs::path(KF_TEST_SOURCE_DIR);
  auto kernel = read_file(root / "examples/tasks/matmul_cuda/matmul.cu");
  auto header = read_file(root / "examples/tasks/matmul_cuda/matmul.h");
  auto answer = read_file(root / "tests/e2e/candidates/matmul_cuda/templated.cu");
  ASSERT_TRUE(kernel && header && answer);
  size_t begin = kernel->find("// [EVOLVE_START]\n"), end = kernel->find("// [EVOLVE_END]");
  ASSERT_TRUE(begin != std::string::npos && end != std::string::npos);
  std::string spliced = kernel->substr(0, begin + 18) + *answer + kernel->substr(end);

  TemplatedKernel k = parse_ok(spliced);
  EXPECT_EQ(k.name, "matmul_forward");
  EXPECT_EQ(labels(k),
            (std::vector<std::string>{"tile=16, rows_per_thread=1", "tile=16, rows_per_thread=2",
                                      "tile=16, rows_per_thread=4", "tile=32, rows_per_thread=1",
                                      "tile=32, rows_per_thread=2"}));
  fs::path dir = fs::temp_directory_path() / ("kf_templated_nvcc_" + std::to_string(getpid()));
  fs::remove_all(dir);
  ASSERT_TRUE(make_dirs(dir).is_ok());
  ASSERT_TRUE(write_file(dir / "matmul.cu", spliced).is_ok());
  ASSERT_TRUE(write_file(dir / "matmul.h", *header).is_ok());
  ASSERT_TRUE(write_file(dir / templated_entry_file(Language::kCuda),
                         templated_entry_source(k, k.combinations[2]))
                  .is_ok());
  // The task's side: calls matmul_forward as matmul.h declares it; the harness's template_param
  // stands in with its fallback.
  ASSERT_TRUE(write_file(dir / "caller.cu",
                         "#include \"matmul.h\"\n"
                         "namespace kernelfoundry {\n"
                         "long long template_param(const char*, long long fallback) { return "
                         "fallback; }\n}\n"
                         "int main(int argc, char**) {\n"
                         "  if (argc > 5) matmul_forward(nullptr, nullptr, nullptr, 0, 0, 0);\n"
                         "  return 0;\n}\n")
                  .is_ok());
  std::string command = "cd '" + dir.string() + "' && '" + nvcc +
                        "' -std=c++17 -arch=sm_90 matmul.cu kf_templated_entry.cu caller.cu -o "
                        "linked > build.log 2>&1";
  int rc = std::system(command.c_str());
  auto log = read_file(dir / "build.log");
  EXPECT_EQ(rc, 0) << (log ? *log : std::string("(no log)"));
  EXPECT_TRUE(fs::exists(dir / "linked"));
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

// A dispatcher whose second combination's kernel does not fit the device: 64 KiB of static
// shared memory against 48 KiB.
constexpr char kOverLimitCuda[] = R"(#include <cuda_runtime.h>
template <int kWords, bool kTwice>
__global__ void fill(float* out) {
  __shared__ float s[kWords];
  s[threadIdx.x] = kTwice ? 2.f : 1.f;
  __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % kWords];
}
template <int kWords, bool kTwice>
void forward_templated(float* out) { fill<kWords, kTwice><<<1, 32>>>(out); }
void fill_forward(float* out, int words, bool twice) {
  if (words == 1024 && twice) return forward_templated<1024, true>(out);
  if (words == 16384 && twice) return forward_templated<16384, true>(out);
  if (words == 1024 && !twice) return forward_templated<1024, false>(out);
}
)";

TEST(Templated, OverLimitKernelsAreReadFromPtxasAndMappedToTheirCombinations) {
  std::string log =
      "ptxas error   : Entry function '_Z4fillILi16384ELb1EEvPf' uses too much shared data "
      "(0x10000 bytes, 0xc000 max)\nptxas fatal   : Ptx assembly aborted due to errors\n"
      "ptxas info    : Entry function '_Z4fillILi1024ELb1EEvPf' compiled\n";
  std::vector<OverLimitKernel> over = over_limit_kernels(log);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(over[0].symbol, "_Z4fillILi16384ELb1EEvPf");
  EXPECT_EQ(over[0].name, "void fill<16384, true>(float*)");
  EXPECT_EQ(over[0].detail, "uses too much shared data (0x10000 bytes, 0xc000 max)");
  TemplatedKernel k = parse_ok(kOverLimitCuda);
  ASSERT_EQ(k.combinations.size(), 3u);
  EXPECT_EQ(combinations_instantiating(k, over[0].name), std::vector<size_t>{1});
  // A kernel templated on some of the parameters: every combination holding its values.
  EXPECT_EQ(combinations_instantiating(k, "void g<1024>(float*)"), (std::vector<size_t>{0, 2}));
  EXPECT_TRUE(combinations_instantiating(k, "void g<(Mode)1>(float*)").empty());
  EXPECT_TRUE(combinations_instantiating(k, "plain_kernel(float*)").empty());
  EXPECT_TRUE(over_limit_kernels("error: expected a ';'").empty());

  auto rewritten = without_combinations(kOverLimitCuda, k, {1});
  ASSERT_TRUE(rewritten.has_value());
  EXPECT_EQ(rewritten->find("return forward_templated<16384, true>(out);"), std::string::npos);
  EXPECT_NE(rewritten->find(
                "return kf_skipped_combination<decltype(forward_templated<16384, true>(out))>();"),
            std::string::npos)
      << *rewritten;
  EXPECT_NE(rewritten->find("return forward_templated<1024, true>(out);"), std::string::npos);
  // The rest reads as before: the same combinations.
  TemplatedKernel again = parse_ok(*rewritten);
  EXPECT_EQ(labels(again),
            (std::vector<std::string>{"words=1024, twice=true", "words=1024, twice=false"}))
      << "the skipped one is no longer listed";
}

// CUDA, build only: the over-limit dispatcher fails in ptxas as a whole; without the combination
// ptxas names, the rest builds.
TEST(TemplatedCuda, SkippingTheOverLimitCombinationLetsTheRestBuild) {
  std::string nvcc;
  for (const char* p : {"/usr/local/cuda/bin/nvcc", "/usr/bin/nvcc"})
    if (nvcc.empty() && access(p, X_OK) == 0) nvcc = p;
  if (nvcc.empty()) GTEST_SKIP() << "nvcc not installed";
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("kf_templated_limits_" + std::to_string(getpid()));
  fs::remove_all(dir);
  ASSERT_TRUE(make_dirs(dir).is_ok());
  auto build = [&](const std::string& source, std::string* log) {
    EXPECT_TRUE(write_file(dir / "fill.cu", source).is_ok());
    std::string command = "cd '" + dir.string() + "' && '" + nvcc +
                          "' -std=c++17 -arch=sm_90 -c fill.cu -o fill.o > build.log 2>&1";
    int rc = std::system(command.c_str());
    auto text = read_file(dir / "build.log");
    *log = text ? *text : "";
    return rc == 0;
  };
  std::string log;
  EXPECT_FALSE(build(kOverLimitCuda, &log)) << log;
  TemplatedKernel k = parse_ok(kOverLimitCuda);
  std::vector<OverLimitKernel> over = over_limit_kernels(log);
  ASSERT_EQ(over.size(), 1u) << log;
  std::vector<size_t> skip = combinations_instantiating(k, over[0].name);
  EXPECT_EQ(skip, std::vector<size_t>{1}) << over[0].name;
  auto rewritten = without_combinations(kOverLimitCuda, k, skip);
  ASSERT_TRUE(rewritten.has_value());
  EXPECT_TRUE(build(*rewritten, &log)) << log << "\n" << *rewritten;
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace kf

namespace kf {
namespace {

TEST(Templated, LaunchLimitErrorsAreReadFromTheHarnessLaunchReport) {
  EXPECT_EQ(launch_limit_error("correctness failed on shape m=1 seed 1 call 1: CUDA error from "
                               "run(): too many resources requested for launch "
                               "(cudaErrorLaunchOutOfResources)"),
            "too many resources requested for launch (cudaErrorLaunchOutOfResources)");
  EXPECT_EQ(launch_limit_error("x: CUDA error from run(): invalid configuration argument "
                               "(cudaErrorInvalidConfiguration)"),
            "invalid configuration argument (cudaErrorInvalidConfiguration)");
  EXPECT_EQ(
      launch_limit_error("x: CUDA error from run(): invalid argument (cudaErrorInvalidValue)\n"),
      "invalid argument (cudaErrorInvalidValue)");
  // Not a launch refused for a limit: a fault while the kernel ran, or another error.
  EXPECT_EQ(launch_limit_error("CUDA error while run()'s work executed: an illegal memory access "
                               "was encountered (cudaErrorIllegalAddress)"),
            "");
  EXPECT_EQ(launch_limit_error("CUDA error while run()'s work executed: invalid argument "
                               "(cudaErrorInvalidValue)"),
            "");
  EXPECT_EQ(launch_limit_error("CUDA error from run(): an illegal memory access was encountered "
                               "(cudaErrorIllegalAddress)\nlater (cudaErrorInvalidValue)"),
            "");
  EXPECT_EQ(launch_limit_error("wrong values on shape m=1"), "");
}

}  // namespace
}  // namespace kf
