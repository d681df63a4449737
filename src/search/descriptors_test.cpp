// Tests for behavioural descriptors: per-language features, the level cap, and that comments and
// strings do not count.
#include "search/descriptors.h"

#include <gtest/gtest.h>

namespace kf {
namespace {

TEST(DescriptorTest, CellName) {
  Descriptor d;
  d.memory = 1;
  d.parallelism = 2;
  EXPECT_EQ(d.cell(), "m1-c0-p2");
}

TEST(DescriptorTest, NaiveKernelIsOrigin) {
  const char* code =
      "__global__ void add(const float* a, float* b, int n) {\n"
      "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
      "  if (i < n) b[i] += a[i];\n}\n";
  EXPECT_EQ(describe_code(code, Language::kCuda), Descriptor{});
}

TEST(DescriptorTest, CudaFeatures) {
  const char* code = R"(
__global__ void __launch_bounds__(256) reduce(const float4* __restrict__ in, float* out, int n) {
  __shared__ float tile[256];
  float sum = 0;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    float4 v = __ldg(&in[i]);
    sum += __expf(v.x) + v.y + v.z + v.w;
  }
  #pragma unroll
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_down_sync(0xffffffff, sum, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(out, sum);
}
)";
  Descriptor d = describe_code(code, Language::kCuda);
  EXPECT_EQ(d.memory, 3);       // shared, float4, __ldg
  EXPECT_EQ(d.compute, 2);      // unroll, __expf
  EXPECT_EQ(d.parallelism, 3);  // launch bounds, grid-stride, shuffle, atomics: capped
  auto features = code_features(code, Language::kCuda);
  EXPECT_NE(std::find(features.begin(), features.end(), "parallelism:grid-stride"), features.end());
}

TEST(DescriptorTest, InlineAsmStringsCount) {
  const char* code =
      "asm volatile(\"cp.async.ca.shared.global [%0], [%1], 16;\" :: \"r\"(s));\n"
      "wmma::fragment<wmma::matrix_a, 16, 16, 16, half> a;\n";
  Descriptor d = describe_code(code, Language::kCuda);
  EXPECT_EQ(d.memory, 1);   // cp.async
  EXPECT_EQ(d.compute, 2);  // wmma, half
}

TEST(DescriptorTest, CommentsAndStringsDoNotCount) {
  const char* code =
      "// uses __shared__ memory and float4 loads, #pragma unroll\n"
      "/* atomicAdd(out, x); __shfl_down_sync */\n"
      "const char* s = \"__shared__ __ldg cooperative_groups\";\n"
      "char c = '\\'';  int n = 1'000;\n"
      "void k() { int shared_count = 0; }\n";
  EXPECT_EQ(describe_code(code, Language::kCuda), Descriptor{});
}

TEST(DescriptorTest, OpenClFeatures) {
  const char* code = R"(
__kernel void sum(__global const float* in, __global float* out) {
  __local float scratch[256];
  float4 v = vload4(get_global_id(0), in);
  float x = native_exp(v.x);
  x = mad(x, 2.0f, 1.0f);
  scratch[get_local_id(0)] = x;
  barrier(CLK_LOCAL_MEM_FENCE);
  float s = sub_group_reduce_add(x);
  atomic_add((volatile __global int*)out, (int)s);
}
)";
  Descriptor d = describe_code(code, Language::kOcl);
  EXPECT_EQ(d.memory, 2);       // __local, vector access
  EXPECT_EQ(d.compute, 2);      // native_, mad
  EXPECT_EQ(d.parallelism, 3);  // sub-groups, local barrier, atomics
}

TEST(DescriptorTest, CppFeatures) {
  const char* code = R"(
void gemm(const float* __restrict__ a, float* __restrict__ c, int n) {
  #pragma omp parallel for collapse(2) reduction(+:total)
  for (int ii = 0; ii < n; ii += TILE) {
    for (int jj = 0; jj < n; jj += TILE) {
      #pragma omp simd
      for (int k = 0; k < n; ++k) {
        __m256 v = _mm256_loadu_ps(a + k);
        if (__builtin_expect(k == 0, 0)) continue;
      }
    }
  }
}
)";
  Descriptor d = describe_code(code, Language::kCpp);
  EXPECT_EQ(d.memory, 2);       // restrict, tiling
  EXPECT_EQ(d.compute, 3);      // omp simd, intrinsics, __builtin_expect
  EXPECT_EQ(d.parallelism, 3);  // omp parallel, reduction, collapse
}

TEST(DescriptorTest, NormaliseDropsSpacesAroundPunctuation) {
  EXPECT_EQ(normalise_code("for ( int i = 0 ;\n i < n ; ++ i ) // c\n", Language::kCpp),
            "for(int i=0;i<n;++i)");
  EXPECT_EQ(normalise_code("x = 1  # tl.dot\ny = '''tl.dot'''\n", Language::kTriton), "x=1 y=");
}

TEST(DescriptorTest, TritonFeatures) {
  const char* code =
      "@triton.autotune(configs=[])\n@triton.jit\ndef k(a, b):\n"
      "    acc = tl.dot(a, b)  # tl.atomic_add in a comment\n";
  Descriptor d = describe_code(code, Language::kTriton);
  EXPECT_EQ(d.compute, 1);
  EXPECT_EQ(d.parallelism, 1);
  EXPECT_EQ(d.memory, 0);
}

}  // namespace
}  // namespace kf
