// Build recipes per language: compile each source of the package to an object, then link the
// task's test binary against the harness flavour of its device API.
#include <algorithm>
#include <cstdlib>

#include "lang/lang.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kf {
namespace {

// Identity of a tool for cache keys: its resolved path, size and mtime (no process needed).
std::string tool_identity(const std::string& tool) {
  std::error_code ec;
  fs::path p = tool;
  if (tool.find('/') == std::string::npos) {
    for (const auto& dir : split(std::getenv("PATH") ? std::getenv("PATH") : "", ':')) {
      fs::path c = fs::path(dir) / tool;
      if (!dir.empty() && fs::exists(c, ec)) {
        p = c;
        break;
      }
    }
  }
  fs::path real = fs::weakly_canonical(p, ec);
  auto size = fs::file_size(real, ec);
  auto mtime = fs::last_write_time(real, ec).time_since_epoch().count();
  return real.string() + ":" + std::to_string(ec ? 0 : size) + ":" + std::to_string(mtime);
}

bool is_header(const fs::path& path) {
  std::string ext = to_lower(path.extension().string());
  return ext == ".h" || ext == ".hpp" || ext == ".cuh" || ext == ".inc" || ext == ".hh";
}

// Hash of every header a source could include: the package's own and the harness's.
Result<std::string> headers_hash(const fs::path& source_dir, const Toolchain& tc) {
  std::vector<fs::path> headers;
  std::error_code ec;
  for (const auto& root : {source_dir, tc.include_dir / "kernelfoundry"}) {
    for (auto it = fs::recursive_directory_iterator(root, ec);
         it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->is_regular_file() && is_header(it->path())) headers.push_back(it->path());
    }
  }
  std::sort(headers.begin(), headers.end());
  Hasher h;
  for (const auto& p : headers) {
    auto text = read_file(p);
    if (!text) return Result<std::string>::error(text.message());
    h.add(p.lexically_relative(source_dir).string()).add(*text);
  }
  return h.hex();
}

struct Flavour {
  std::string harness_lib;             // kf_harness_<x>
  std::vector<std::string> cxx_flags;  // for host sources
  std::vector<std::string> link_flags;
};

Result<Flavour> flavour_for(Language language, const Toolchain& tc) {
  Flavour f;
  switch (language) {
    case Language::kCpp:
      f.harness_lib = "kf_harness_host";
      f.cxx_flags = {"-std=c++17", "-O3", "-march=native", "-fopenmp"};
      f.link_flags = {"-fopenmp", "-lpthread"};
      return f;
    case Language::kOcl:
      f.harness_lib = "kf_harness_opencl";
      f.cxx_flags = {"-std=c++17", "-O2", "-DCL_TARGET_OPENCL_VERSION=120"};
      f.link_flags = {"-lOpenCL", "-lpthread"};
      return f;
    case Language::kCuda:
      if (tc.nvcc.empty())
        return Result<Flavour>::error(
            "language CUDA needs nvcc (the CUDA toolkit), which was not found in PATH or "
            "/usr/local/cuda/bin; install the CUDA toolkit or put nvcc on PATH");
      f.harness_lib = "kf_harness_cuda";
      f.cxx_flags = {"-std=c++17", "-O3", "-I" + (tc.cuda_root / "include").string()};
      f.link_flags = {"-L" + (tc.cuda_root / "lib64").string(), "-lcudart_static", "-ldl", "-lrt",
                      "-lpthread"};
      return f;
    case Language::kSycl:
      return Result<Flavour>::error(
          "language SYCL needs a SYCL compiler: neither icpx (Intel oneAPI DPC++) nor acpp "
          "(AdaptiveCpp) is available to this KernelFoundry build; install one and its harness "
          "flavour, or choose CUDA, OCL or CPP");
    case Language::kTriton:
      return Result<Flavour>::error(
          "language triton needs the Python task runner (task.py run by python3 with the triton "
          "and torch packages), which this KernelFoundry build does not have; native tasks "
          "(CUDA, OCL, CPP) are supported");
  }
  return Result<Flavour>::error("unsupported language");
}

}  // namespace

Result<BuildPlan> plan_build(const BuildRequest& req, const Toolchain& tc) {
  auto flavour = flavour_for(req.language, tc);
  if (!flavour) return Result<BuildPlan>::error(flavour.message());
  std::error_code ec;
  if (!fs::exists(tc.lib_dir / ("lib" + flavour->harness_lib + ".a"), ec))
    return Result<BuildPlan>::error("the harness library lib" + flavour->harness_lib +
                                    ".a is missing from " + tc.lib_dir.string() +
                                    " (KernelFoundry was built without " +
                                    std::string(language_name(req.language)) + " support)");
  auto headers = headers_hash(req.source_dir, tc);
  if (!headers) return Result<BuildPlan>::error(headers.message());

  std::vector<fs::path> sources;
  for (auto it = fs::recursive_directory_iterator(req.source_dir, ec);
       it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file() && is_compiled_source(req.language, it->path()))
      sources.push_back(it->path());
  }
  std::sort(sources.begin(), sources.end());
  if (sources.empty())
    return Result<BuildPlan>::error(
        "the task package has no source file to compile (expected task.cpp)");

  BuildPlan plan;
  std::vector<std::string> includes = {"-I" + req.source_dir.string(),
                                       "-I" + tc.include_dir.string()};
  std::string cxx_id = tool_identity(tc.cxx);
  Hasher link_key;
  link_key.add("link").add(cxx_id);
  for (const auto& src : sources) {
    std::string rel = src.lexically_relative(req.source_dir).string();
    auto text = read_file(src);
    if (!text) return Result<BuildPlan>::error(text.message());
    BuildStep step;
    step.label = "compile " + rel;
    step.output = req.build_dir / "obj" / (replace_all(rel, "/", "__") + ".o");
    bool cuda_source = to_lower(src.extension().string()) == ".cu";
    std::vector<std::string> flags;
    std::string tool;
    if (cuda_source) {
      tool = tc.nvcc;
      flags = {"-std=c++17", "-O3", "-lineinfo"};
      flags.push_back(req.cuda_sm.empty() ? "-arch=native" : "-arch=" + req.cuda_sm);
    } else {
      tool = tc.cxx;
      flags = flavour->cxx_flags;
    }
    Hasher key;
    key.add(cuda_source ? tool_identity(tool) : cxx_id)
        .add(join(flags, " "))
        .add(rel)
        .add(*text)
        .add(*headers);
    step.cache_key = key.hex();
    step.argv.push_back(tool);
    step.argv.insert(step.argv.end(), flags.begin(), flags.end());
    step.argv.insert(step.argv.end(), includes.begin(), includes.end());
    step.argv.insert(step.argv.end(), {"-c", src.string(), "-o", step.output.string()});
    // KF_NVCC_SPLIT=0: nvcc as a whole (docs/harness.md; for comparisons and odd toolkits).
    const char* split = std::getenv("KF_NVCC_SPLIT");
    step.nvcc_split = cuda_source && !(split != nullptr && std::string(split) == "0");
    link_key.add(step.cache_key);
    plan.compiles.push_back(std::move(step));
  }

  auto lib_stat = fs::last_write_time(tc.lib_dir / ("lib" + flavour->harness_lib + ".a"), ec);
  link_key.add(flavour->harness_lib)
      .add(std::to_string(lib_stat.time_since_epoch().count()))
      .add(join(flavour->link_flags, " "))
      .add("-Wl,-z,relro,-z,now");
  plan.binary = req.build_dir / "task_bin";
  plan.link.label = "link task binary";
  plan.link.cache_key = link_key.hex();
  plan.link.output = plan.binary;
  plan.link.argv.push_back(tc.cxx);
  for (const auto& c : plan.compiles) plan.link.argv.push_back(c.output.string());
  plan.link.argv.push_back("-L" + tc.lib_dir.string());
  plan.link.argv.push_back("-l" + flavour->harness_lib);
  plan.link.argv.insert(plan.link.argv.end(), flavour->link_flags.begin(),
                        flavour->link_flags.end());
  // Full RELRO: the binary's GOT is read-only once loaded, so candidate code cannot redirect the
  // harness's calls (a clock, a comparison) by writing a pointer.
  plan.link.argv.insert(plan.link.argv.end(), {"-Wl,-z,relro,-z,now", "-o", plan.binary.string()});
  return plan;
}

}  // namespace kf
