#include "task/scaffold.h"

#include <map>
#include <system_error>

#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

namespace fs = std::filesystem;
using Files = std::map<std::string, std::string>;

std::string config_yaml(const std::string& name, const std::string& language,
                        const std::string& arch) {
  return "# Task package written by `kernelfoundry init`; see docs/task-package.md.\n"
         "task_name: " +
         name + "\n" + "job_name: " + name + "_job\n" + "language: " + language + "\n" +
         "gpu_arch: " + arch + "\n" + "max_iters: 3\n" + "branches_per_iteration: 2\n";
}

const char* kReadme =
    "# A starter task package\n\n"
    "y = a * x over a vector of floats. The EVOLVE block holds the kernel the LLM rewrites; the\n"
    "REFERENCE block is what it is checked and timed against; USER_INSTRUCTIONS goes into every\n"
    "prompt verbatim. Replace all three with your own kernel, then:\n\n"
    "    kernelfoundry test .          # build and run the tests once on the EVOLVE block\n"
    "    kernelfoundry test . --ref    # the same on the reference\n"
    "    kernelfoundry run task=. validate=true\n";

// The harness program is nearly the same for each language: only the run() body and backend differ.
std::string task_cpp(const std::string& include, const std::string& run_body,
                     const std::string& backend) {
  return "// Tests and benchmark of the task, written with the KernelFoundry harness.\n"
         "#include <kernelfoundry/harness.h>\n" +
         include +
         "\nnamespace kf = kernelfoundry;\n\n"
         "struct Scale : kf::Problem {\n"
         "  void setup(kf::Case& c) override {\n"
         "    c.input(\"x\", kf::f32, c.dim(\"n\"), kf::normal(0, 1));\n"
         "    c.output(\"y\", kf::f32, c.dim(\"n\"), kf::tolerance(1e-5, 1e-7));\n"
         "  }\n"
         "  void run(kf::Case& c, kf::Impl impl) override {\n"
         "    float a = c.param<float>(\"a\", 1.5f);\n" +
         run_body +
         "  }\n"
         "};\n\n"
         "int main(int argc, char** argv) {\n"
         "  Scale problem;\n"
         "  return kf::main(argc, argv, problem, kf::Backend::" +
         backend +
         ",\n"
         "                  {{{\"n\", 1}}, {{\"n\", 1000}}, {{\"n\", 65537}}},\n"
         "                  kf::benchmark(\"scale\", {{{\"n\", 1 << 20}}, {{\"n\", 1 << 24}}}));\n"
         "}\n";
}

const char* kInstructions =
    "// [USER_INSTRUCTIONS_START]\n"
    "// Keep the signature. n need not be a multiple of any block size; write every y element.\n"
    "// [USER_INSTRUCTIONS_END]\n";

Files cpp_files() {
  return {
      {"scale.h",
       "#pragma once\n\n"
       "void scale(const float* x, float* y, long n, float a);\n"
       "void scale_reference(const float* x, float* y, long n, float a);\n"},
      {"scale.cpp", std::string("#include \"scale.h\"\n\n") + kInstructions +
                        "\n// [EVOLVE_START]\n"
                        "void scale(const float* x, float* y, long n, float a) {\n"
                        "  for (long i = 0; i < n; ++i) y[i] = a * x[i];\n"
                        "}\n"
                        "// [EVOLVE_END]\n"},
      {"reference.cpp",
       "#include \"scale.h\"\n\n"
       "// [REFERENCE_START]\n"
       "void scale_reference(const float* x, float* y, long n, float a) {\n"
       "#pragma omp parallel for\n"
       "  for (long i = 0; i < n; ++i) y[i] = a * x[i];\n"
       "}\n"
       "// [REFERENCE_END]\n"},
      {"task.cpp",
       task_cpp("\n#include \"scale.h\"\n",
                "    const float* x = c.buffer(\"x\").host<const float>();\n"
                "    float* y = c.buffer(\"y\").host<float>();\n"
                "    (impl == kf::Impl::Reference ? scale_reference : scale)(x, y, c.dim(\"n\"), "
                "a);\n",
                "Host")},
  };
}

Files cuda_files() {
  return {
      {"scale.h",
       "#pragma once\n\n"
       "// Device pointers; launch on the default stream and return without synchronising.\n"
       "void scale_forward(const float* x, float* y, long n, float a);\n"
       "void scale_reference(const float* x, float* y, long n, float a);\n"},
      {"scale.cu", std::string("#include \"scale.h\"\n\n") + kInstructions +
                       "\n// [EVOLVE_START]\n"
                       "__global__ void scale_kernel(const float* x, float* y, long n, float a) {\n"
                       "  long i = blockIdx.x * long(blockDim.x) + threadIdx.x;\n"
                       "  if (i < n) y[i] = a * x[i];\n"
                       "}\n\n"
                       "void scale_forward(const float* x, float* y, long n, float a) {\n"
                       "  int threads = 128;\n"
                       "  scale_kernel<<<(n + threads - 1) / threads, threads>>>(x, y, n, a);\n"
                       "}\n"
                       "// [EVOLVE_END]\n"},
      {"reference.cu",
       "#include \"scale.h\"\n\n"
       "// [REFERENCE_START]\n"
       "__global__ void scale_reference_kernel(const float* x, float* y, long n, float a) {\n"
       "  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n;\n"
       "       i += long(gridDim.x) * blockDim.x)\n"
       "    y[i] = a * x[i];\n"
       "}\n\n"
       "void scale_reference(const float* x, float* y, long n, float a) {\n"
       "  scale_reference_kernel<<<1024, 256>>>(x, y, n, a);\n"
       "}\n"
       "// [REFERENCE_END]\n"},
      {"task.cpp",
       task_cpp("\n#include \"scale.h\"\n",
                "    const float* x = c.buffer(\"x\").cuda<const float>();\n"
                "    float* y = c.buffer(\"y\").cuda<float>();\n"
                "    (impl == kf::Impl::Reference ? scale_reference : scale_forward)(x, y, "
                "c.dim(\"n\"), a);\n",
                "CUDA")},
  };
}

Files ocl_files() {
  return {
      {"scale.cl", std::string(kInstructions) +
                       "\n// [EVOLVE_START]\n"
                       "__kernel void scale(__global const float* x, __global float* y, long n, "
                       "float a) {\n"
                       "  long i = get_global_id(0);\n"
                       "  if (i < n) y[i] = a * x[i];\n"
                       "}\n"
                       "// [EVOLVE_END]\n"},
      {"reference.cl",
       "// [REFERENCE_START]\n"
       "__kernel void scale_reference(__global const float* x, __global float* y, long n,\n"
       "                              float a) {\n"
       "  for (long i = get_global_id(0); i < n; i += get_global_size(0)) y[i] = a * x[i];\n"
       "}\n"
       "// [REFERENCE_END]\n"},
      {"task.cpp",
       task_cpp("",
                "    kf::OpenCL& cl = c.opencl();\n"
                "    bool ref = impl == kf::Impl::Reference;\n"
                "    kf::ClKernel& k = ref ? cl.kernel(\"reference.cl\", \"scale_reference\")\n"
                "                          : cl.kernel(\"scale.cl\", \"scale\");\n"
                "    long n = c.dim(\"n\");\n"
                "    k.args(c.buffer(\"x\"), c.buffer(\"y\"), n, a);\n"
                "    long local = 64, global = ref ? 64 * 256 : (n + local - 1) / local * local;\n"
                "    cl.launch(k, {global}, {local});\n",
                "OpenCL")},
  };
}

}  // namespace

Status scaffold_task(const fs::path& dir, const std::string& language) {
  std::string lang = to_upper(language);
  Files files;
  std::string arch;
  if (lang == "CUDA") {
    files = cuda_files();
    arch = "h200";
  } else if (lang == "OCL" || lang == "OPENCL") {
    lang = "OCL";
    files = ocl_files();
    arch = "native";
  } else if (lang == "CPP") {
    files = cpp_files();
    arch = "cpu";
  } else {
    return Status::error("init: cannot scaffold language '" + language +
                         "'; choose one of CUDA, OCL, CPP");
  }
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec))
    return Status::error("init: " + dir.string() + " exists and is not empty; give a new folder");
  std::string name = dir.filename().string();
  if (name.empty() || name == "." || name == "..") name = "my_task";
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_') ch = '_';
  files["config.yaml"] = config_yaml(name, lang, arch);
  files["README.md"] = kReadme;
  for (const auto& [rel, text] : files) KF_RETURN_IF_ERROR(write_file(dir / rel, text));
  return Status::ok();
}

}  // namespace kf
