// Language names as users write them in config.yaml.
#include "lang/lang.h"

#include "util/strings.h"

namespace kf {

Result<Language> parse_language(std::string_view name) {
  std::string key = to_lower(trim(name));
  if (key == "cuda") return Language::kCuda;
  if (key == "ocl" || key == "opencl") return Language::kOcl;
  if (key == "sycl") return Language::kSycl;
  if (key == "triton") return Language::kTriton;
  if (key == "cpp" || key == "c++") return Language::kCpp;
  std::string hint = nearest(key, {"cuda", "ocl", "sycl", "triton", "cpp"});
  return Result<Language>::error("unknown language '" + std::string(name) +
                                 "'; use one of CUDA, OCL, SYCL, triton, CPP" +
                                 (hint.empty() ? "" : " (did you mean '" + hint + "'?)"));
}

std::string_view language_name(Language language) {
  switch (language) {
    case Language::kCuda:
      return "CUDA";
    case Language::kOcl:
      return "OCL";
    case Language::kSycl:
      return "SYCL";
    case Language::kTriton:
      return "triton";
    case Language::kCpp:
      return "CPP";
  }
  return "?";
}

bool is_compiled_source(Language language, const std::filesystem::path& path) {
  std::string ext = to_lower(path.extension().string());
  bool host = ext == ".cpp" || ext == ".cc" || ext == ".cxx";
  switch (language) {
    case Language::kCuda:
      return host || ext == ".cu";
    case Language::kSycl:
      return host || ext == ".sycl";
    case Language::kOcl:
    case Language::kCpp:
      return host;
    case Language::kTriton:
      return false;
  }
  return false;
}

}  // namespace kf
