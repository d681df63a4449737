// Behavioural descriptors: per-language feature tables matched on comment-free, normalised source.
#include "search/descriptors.h"

#include <algorithm>
#include <cctype>

#include "util/strings.h"

namespace kf {
namespace {

enum Axis { kMemory, kCompute, kParallelism };
constexpr std::string_view kAxisNames[] = {"memory", "compute", "parallelism"};

// A feature is present when any pattern matches. A pattern's identifier ends must sit on
// identifier boundaries; a trailing '*' makes it a prefix ("__shfl*" matches __shfl_down_sync).
struct Feature {
  Axis axis;
  std::string_view name;
  std::vector<std::string_view> patterns;
};

const std::vector<Feature>& features_for(Language language) {
  static const std::vector<Feature> kCuda = {
      {kMemory, "shared", {"__shared__"}},
      {kMemory,
       "vector-access",
       {"float4", "float2", "int4", "int2", "uint4", "uint2", "half2", "__half2", "double2",
        "__nv_bfloat162", "nv_bfloat162"}},
      {kMemory, "read-only-cache", {"__ldg", "__ldcg", "__ldca", "__ldcs", "__ldlu", "__ldcv"}},
      {kMemory, "async-copy", {"cp.async", "memcpy_async", "__pipeline_memcpy_async", "cp_async*"}},
      {kMemory,
       "tma",
       {"cp.async.bulk*", "CUtensorMap", "cuTensorMapEncode*", "cp_async_bulk_tensor*"}},
      {kCompute, "unroll", {"#pragma unroll"}},
      {kCompute,
       "fast-math",
       {"__fmaf*", "fmaf", "__fma_rn", "__expf", "__logf", "__log2f", "__sinf", "__cosf", "__tanf",
        "__powf", "__exp10f", "__fdividef", "__frcp*", "__frsqrt*", "rsqrtf", "__fsqrt*",
        "__fadd_r*", "__fmul_r*", "__saturatef"}},
      {kCompute,
       "half-precision",
       {"half", "__half", "__nv_bfloat16", "nv_bfloat16", "__hadd*", "__hmul*", "__hfma*",
        "__hsub*", "__hdiv*", "__hmax*", "__hmin*", "hexp*", "h2exp*", "__float2half*",
        "__half2float", "__float2bfloat16*", "__bfloat162float"}},
      {kCompute,
       "tensor-cores",
       {"wmma", "mma_sync", "load_matrix_sync", "mma.sync*", "wgmma*", "ldmatrix*", "tcgen05*"}},
      {kParallelism,
       "warp-shuffle",
       {"__shfl*", "__reduce_add_sync", "__reduce_min_sync", "__reduce_max_sync", "__ballot_sync",
        "__any_sync", "__all_sync", "__match_any_sync"}},
      {kParallelism,
       "cooperative-groups",
       {"cooperative_groups", "this_thread_block", "tiled_partition*", "this_grid",
        "thread_block_tile"}},
      {kParallelism, "atomics", {"atomic*", "red.global*"}},
      {kParallelism,
       "grid-stride",
       {"blockDim.x*gridDim.x", "gridDim.x*blockDim.x", "gridDim.x*(int)blockDim.x"}},
      {kParallelism, "launch-bounds", {"__launch_bounds__"}},
      {kParallelism, "streams", {"cudaStreamCreate*", "cudaGraph*"}},
  };
  static const std::vector<Feature> kOcl = {
      {kMemory, "local", {"__local", "local"}},
      {kMemory,
       "vector-access",
       {"vload*", "vstore*", "float2", "float4", "float8", "float16", "int4", "half2", "half4",
        "half8"}},
      {kMemory,
       "async-copy",
       {"async_work_group_copy", "async_work_group_strided_copy", "wait_group_events"}},
      {kMemory, "prefetch", {"prefetch"}},
      {kCompute, "native-math", {"native_*", "half_*"}},
      {kCompute, "fma", {"mad", "mad24", "mul24", "fma", "mad_sat"}},
      {kCompute, "unroll", {"#pragma unroll", "opencl_unroll_hint"}},
      {kParallelism, "sub-groups", {"sub_group_*", "get_sub_group*", "intel_sub_group*"}},
      {kParallelism, "work-group-collectives", {"work_group_*"}},
      {kParallelism, "local-reduction", {"CLK_LOCAL_MEM_FENCE"}},
      {kParallelism, "atomics", {"atomic_*", "atom_*", "atomic"}},
  };
  static const std::vector<Feature> kCpp = {
      {kMemory, "restrict", {"__restrict__", "__restrict", "restrict"}},
      {kMemory,
       "tiling",
       {"+=BLOCK*", "+=TILE*", "+=Block*", "+=Tile*", "+=block*", "+=tile*", "+=kBlock*",
        "+=kTile*", "+=BS", "+=TS", "+=BM", "+=BN", "+=BK", "+=MC", "+=NC", "+=KC"}},
      {kMemory,
       "aligned",
       {"alignas", "aligned", "aligned_alloc", "assume_aligned", "__builtin_assume_aligned",
        "_mm_malloc", "posix_memalign"}},
      {kMemory, "prefetch", {"__builtin_prefetch", "_mm_prefetch"}},
      {kCompute,
       "simd-pragma",
       {"#pragma omp simd", "for simd", "#pragma GCC ivdep", "#pragma ivdep",
        "#pragma clang loop vectorize*"}},
      {kCompute,
       "intrinsics",
       {"_mm_*", "_mm256_*", "_mm512_*", "__m128*", "__m256*", "__m512*", "vld1*", "vst1*",
        "vfmaq*", "float32x4_t"}},
      {kCompute, "branch-hints", {"__builtin_expect", "[[likely]]", "[[unlikely]]"}},
      {kCompute, "unroll", {"#pragma unroll", "#pragma GCC unroll", "#pragma clang loop unroll*"}},
      {kParallelism,
       "omp-parallel",
       {"#pragma omp parallel", "#pragma omp for", "#pragma omp task"}},
      {kParallelism,
       "threads",
       {"std::thread", "std::jthread", "std::async", "pthread_create", "std::execution::par*"}},
      {kParallelism, "reduction", {"reduction("}},
      {kParallelism, "collapse", {"collapse("}},
  };
  static const std::vector<Feature> kSycl = {
      {kMemory, "local", {"local_accessor", "group_local_memory*", "access::target::local"}},
      {kMemory, "vector-access", {"vec<", "float4", "float2", "half2"}},
      {kMemory, "prefetch", {"prefetch"}},
      {kCompute, "unroll", {"#pragma unroll"}},
      {kCompute, "native-math", {"native::*", "half_precision::*"}},
      {kCompute, "half-precision", {"half", "bfloat16"}},
      {kCompute, "matrix", {"joint_matrix*"}},
      {kParallelism,
       "sub-groups",
       {"sub_group", "get_sub_group", "permute_group_by_xor", "shift_group_*",
        "select_from_group"}},
      {kParallelism, "group-collectives", {"reduce_over_group", "joint_reduce", "group_broadcast"}},
      {kParallelism, "atomics", {"atomic_ref", "atomic_fence"}},
      {kParallelism, "reduction", {"reduction("}},
  };
  static const std::vector<Feature> kTriton = {
      {kMemory, "block-pointers", {"tl.make_block_ptr", "tl.advance", "make_tensor_descriptor"}},
      {kMemory, "cache-hints", {"eviction_policy", "cache_modifier"}},
      {kMemory, "alignment-hints", {"tl.multiple_of", "tl.max_contiguous"}},
      {kMemory, "pipelining", {"num_stages"}},
      {kCompute, "dot", {"tl.dot"}},
      {kCompute, "low-precision", {"tl.float16", "tl.bfloat16", "tl.float8*"}},
      {kCompute, "fast-math", {"libdevice", "tl.math.*", "fast_expf"}},
      {kCompute, "unroll", {"tl.static_range"}},
      {kParallelism, "atomics", {"tl.atomic_*"}},
      {kParallelism, "autotune", {"triton.autotune", "num_warps"}},
      {kParallelism, "grouped-launch", {"GROUP_SIZE*", "tl.swizzle2d"}},
  };
  switch (language) {
    case Language::kCuda:
      return kCuda;
    case Language::kOcl:
      return kOcl;
    case Language::kSycl:
      return kSycl;
    case Language::kTriton:
      return kTriton;
    case Language::kCpp:
      return kCpp;
  }
  return kCpp;
}

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

bool matches(std::string_view text, std::string_view pattern) {
  const bool prefix = pattern.back() == '*';
  if (prefix) pattern.remove_suffix(1);
  const bool check_before = is_ident(pattern.front());
  const bool check_after = !prefix && is_ident(pattern.back());
  for (size_t pos = text.find(pattern); pos != std::string_view::npos;
       pos = text.find(pattern, pos + 1)) {
    const size_t end = pos + pattern.size();
    if (check_before && pos > 0 && is_ident(text[pos - 1])) continue;
    if (check_after && end < text.size() && is_ident(text[end])) continue;
    return true;
  }
  return false;
}

// Blanks comments and strings of C-family source. Strings inside asm(...) are kept: they are code.
std::string strip_c_like(std::string_view code) {
  std::string out;
  std::string word;  // the identifier being read, to spot `asm`
  bool asm_pending = false;
  int asm_parens = 0;
  for (size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (is_ident(c)) {
      word += c;
      out += c;
      continue;
    }
    if (!word.empty()) {
      if (word == "asm" || word == "__asm__" || word == "__asm") {
        asm_pending = true;
      } else if (word != "volatile" && word != "__volatile__" && word != "goto") {
        asm_pending = false;
      }
      word.clear();
    }
    const std::string_view rest = code.substr(i);
    if (starts_with(rest, "//")) {
      while (i + 1 < code.size() && code[i + 1] != '\n') ++i;
      out += ' ';
    } else if (starts_with(rest, "/*")) {
      size_t close = code.find("*/", i + 2);
      i = close == std::string_view::npos ? code.size() : close + 1;
      out += ' ';
    } else if (c == '"' ||
               (c == '\'' &&
                (i == 0 || !std::isalnum(static_cast<unsigned char>(code[i - 1]))))) {  // not 1'000
      size_t j = i + 1;
      while (j < code.size() && code[j] != c && code[j] != '\n') j += code[j] == '\\' ? 2 : 1;
      if (asm_parens > 0) out.append(code.substr(i + 1, std::min(j, code.size()) - i - 1));
      out += ' ';
      i = std::min(j, code.size());
    } else {
      if (c == '(') {
        if (asm_parens > 0 || asm_pending) ++asm_parens;
        asm_pending = false;
      } else if (c == ')') {
        if (asm_parens > 0) --asm_parens;
      } else if (!std::isspace(static_cast<unsigned char>(c))) {
        asm_pending = false;
      }
      out += c;
    }
  }
  return out;
}

// Blanks `#` comments and string literals (single, double and triple quoted) of Python source.
std::string strip_python(std::string_view code) {
  std::string out;
  for (size_t i = 0; i < code.size(); ++i) {
    const char c = code[i];
    if (c == '#') {
      while (i + 1 < code.size() && code[i + 1] != '\n') ++i;
      out += ' ';
    } else if (c == '"' || c == '\'') {
      const std::string triple(3, c);
      if (code.substr(i, 3) == triple) {
        size_t close = code.find(triple, i + 3);
        i = close == std::string_view::npos ? code.size() : close + 2;
      } else {
        size_t j = i + 1;
        while (j < code.size() && code[j] != c && code[j] != '\n') j += code[j] == '\\' ? 2 : 1;
        i = std::min(j, code.size());
      }
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::vector<const Feature*> present_features(std::string_view text, Language language) {
  std::vector<const Feature*> present;
  for (const Feature& feature : features_for(language)) {
    if (std::any_of(feature.patterns.begin(), feature.patterns.end(),
                    [&](std::string_view p) { return matches(text, p); }))
      present.push_back(&feature);
  }
  return present;
}

}  // namespace

std::string Descriptor::cell() const {
  return strprintf("m%d-c%d-p%d", memory, compute, parallelism);
}

std::string normalise_code(std::string_view code, Language language) {
  const std::string stripped =
      language == Language::kTriton ? strip_python(code) : strip_c_like(code);
  std::string out;
  bool pending_space = false;
  for (char c : stripped) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      pending_space = true;
      continue;
    }
    if (pending_space && !out.empty() && is_ident(out.back()) && is_ident(c)) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

std::vector<std::string> code_features(std::string_view code, Language language) {
  std::vector<std::string> names;
  for (const Feature* f : present_features(normalise_code(code, language), language))
    names.push_back(std::string(kAxisNames[f->axis]) + ":" + std::string(f->name));
  return names;
}

Descriptor describe_code(std::string_view code, Language language) {
  int counts[3] = {0, 0, 0};
  for (const Feature* f : present_features(normalise_code(code, language), language))
    ++counts[f->axis];
  Descriptor d;
  d.memory = std::min(counts[kMemory], kMaxDescriptorLevel);
  d.compute = std::min(counts[kCompute], kMaxDescriptorLevel);
  d.parallelism = std::min(counts[kParallelism], kMaxDescriptorLevel);
  return d;
}

}  // namespace kf
