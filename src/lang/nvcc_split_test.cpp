// Tests for the split nvcc build: regrouping a recorded nvcc 13 dry run, refusing shapes it does
// not know, and (where nvcc is installed) real builds through run_build: an object that has the
// kernel and its registration, a dry run listed once per command, and a compile error said once,
// in nvcc's own words.
#include "lang/nvcc_split.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <mutex>

#include <gtest/gtest.h>

#include "lang/lang.h"
#include "proc/sandbox.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

// `nvcc -std=c++17 -O3 -lineinfo -arch=sm_90 -I/src -c /src/k.cu -o /b/obj/k.o --dryrun --keep
// --keep-dir /b/obj/k.o.nvcc` (CUDA 13.0), as nvcc printed it.
const char kDryRun[] = R"DRY(#$ _NVVM_BRANCH_=nvvm
#$ _SPACE_= 
#$ _CUDART_=cudart
#$ _HERE_=/usr/local/cuda/bin
#$ _THERE_=/usr/local/cuda/bin
#$ _TARGET_SIZE_=
#$ _TARGET_DIR_=
#$ _TARGET_DIR_=targets/x86_64-linux
#$ TOP=/usr/local/cuda/bin/..
#$ CICC_PATH=/usr/local/cuda/bin/../nvvm/bin
#$ NVVMIR_LIBRARY_DIR=/usr/local/cuda/bin/../nvvm/libdevice
#$ LD_LIBRARY_PATH=/usr/local/cuda/bin/../lib:
#$ PATH=/usr/local/cuda/bin/../nvvm/bin:/usr/local/cuda/bin:/usr/local/cuda/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
#$ INCLUDES="-I/usr/local/cuda/bin/../targets/x86_64-linux/include"  
#$ SYSTEM_INCLUDES="-isystem" "/usr/local/cuda/bin/../targets/x86_64-linux/include/cccl"  
#$ LIBRARIES=  "-L/usr/local/cuda/bin/../targets/x86_64-linux/lib/stubs" "-L/usr/local/cuda/bin/../targets/x86_64-linux/lib"
#$ CUDAFE_FLAGS=
#$ PTXAS_FLAGS=
#$ gcc -std=c++17 -D__CUDA_ARCH_LIST__=900 -E -x c++ -D__CUDACC__ -D__NVCC__  -O3 -I"/src" "-I/usr/local/cuda/bin/../targets/x86_64-linux/include"   "-isystem" "/usr/local/cuda/bin/../targets/x86_64-linux/include/cccl"    -D__CUDACC_VER_MAJOR__=13 -D__CUDACC_VER_MINOR__=0 -D__CUDACC_VER_BUILD__=88 -D__CUDA_API_VER_MAJOR__=13 -D__CUDA_API_VER_MINOR__=0 -D__NVCC_DIAG_PRAGMA_SUPPORT__=1 -D__CUDACC_DEVICE_ATOMIC_BUILTINS__=1 -include "cuda_runtime.h" -m64 "/src/k.cu" -o "/b/obj/k.o.nvcc/k.cpp4.ii" 
#$ cudafe++ --c++17 --static-host-stub --device-hidden-visibility --gnu_version=120200 --display_error_number --orig_src_file_name "/src/k.cu" --orig_src_path_name "/src/k.cu" --allow_managed  --m64 --parse_templates --gen_c_file_name "/b/obj/k.o.nvcc/k.cudafe1.cpp" --stub_file_name "k.cudafe1.stub.c" --gen_module_id_file --module_id_file_name "/b/obj/k.o.nvcc/k.module_id" "/b/obj/k.o.nvcc/k.cpp4.ii" 
#$ gcc -std=c++17 -D__CUDA_ARCH__=900 -D__CUDA_ARCH_LIST__=900 -E -x c++  -DCUDA_DOUBLE_MATH_FUNCTIONS -D__CUDACC__ -D__NVCC__  -O3 -I"/src" "-I/usr/local/cuda/bin/../targets/x86_64-linux/include"   "-isystem" "/usr/local/cuda/bin/../targets/x86_64-linux/include/cccl"    -D__CUDACC_VER_MAJOR__=13 -D__CUDACC_VER_MINOR__=0 -D__CUDACC_VER_BUILD__=88 -D__CUDA_API_VER_MAJOR__=13 -D__CUDA_API_VER_MINOR__=0 -D__NVCC_DIAG_PRAGMA_SUPPORT__=1 -D__CUDACC_DEVICE_ATOMIC_BUILTINS__=1 -include "cuda_runtime.h" -m64 "/src/k.cu" -o "/b/obj/k.o.nvcc/k.cpp1.ii" 
#$ "$CICC_PATH/cicc" --c++17 --static-host-stub --device-hidden-visibility --gnu_version=120200 --display_error_number --orig_src_file_name "/src/k.cu" --orig_src_path_name "/src/k.cu" --allow_managed   -arch compute_90 -m64 --no-version-ident -ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 --include_file_name "k.fatbin.c" -generate-line-info -tused --module_id_file_name "/b/obj/k.o.nvcc/k.module_id" --gen_c_file_name "/b/obj/k.o.nvcc/k.cudafe1.c" --stub_file_name "/b/obj/k.o.nvcc/k.cudafe1.stub.c" --gen_device_file_name "/b/obj/k.o.nvcc/k.cudafe1.gpu"  "/b/obj/k.o.nvcc/k.cpp1.ii" -o "/b/obj/k.o.nvcc/k.ptx"
#$ ptxas -arch=sm_90 -m64  --generate-line-info "/b/obj/k.o.nvcc/k.ptx"  -o "/b/obj/k.o.nvcc/k.sm_90.cubin" 
#$ fatbinary --create="/b/obj/k.o.nvcc/k.fatbin" -64 --ident="/src/k.cu" --cmdline=" --generate-line-info " --cicc-cmdline="-generate-line-info -ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 " "--image3=kind=elf,sm=90,file=/b/obj/k.o.nvcc/k.sm_90.cubin" "--image3=kind=ptx,sm=90,file=/b/obj/k.o.nvcc/k.ptx" --embedded-fatbin="/b/obj/k.o.nvcc/k.fatbin.c" 
#$ gcc -std=c++17 -D__CUDA_ARCH__=900 -D__CUDA_ARCH_LIST__=900 -c -x c++  -DCUDA_DOUBLE_MATH_FUNCTIONS -O3 -Wno-psabi -I"/src" "-I/usr/local/cuda/bin/../targets/x86_64-linux/include"   "-isystem" "/usr/local/cuda/bin/../targets/x86_64-linux/include/cccl"   -m64 "/b/obj/k.o.nvcc/k.cudafe1.cpp" -o "/b/obj/k.o" 
)DRY";

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(NvccSplit, HostAndDeviceSidesAreSeparatedAroundAModuleIdWrittenBeforehand) {
  auto split = split_nvcc_steps(kDryRun);
  ASSERT_TRUE(split.is_ok()) << split.message();
  EXPECT_EQ(split->module_id_file, "/b/obj/k.o.nvcc/k.module_id");
  // Host: its preprocessing and cudafe++, which now reads the module id instead of writing it.
  EXPECT_NE(split->host_script.find("k.cpp4.ii"), std::string::npos);
  EXPECT_NE(split->host_script.find("cudafe++ "), std::string::npos);
  EXPECT_EQ(split->host_script.find("--gen_module_id_file"), std::string::npos);
  EXPECT_EQ(split->host_script.find("cicc"), std::string::npos);
  // Device: its preprocessing, cicc, ptxas and fatbinary, in nvcc's order.
  const std::string& dev = split->device_script;
  size_t pre = dev.find("k.cpp1.ii\" \n"), cicc = dev.find("$CICC_PATH/cicc"),
         ptxas = dev.find("\nptxas "), fatbin = dev.find("\nfatbinary ");
  ASSERT_NE(pre, std::string::npos);
  ASSERT_NE(cicc, std::string::npos);
  ASSERT_NE(ptxas, std::string::npos);
  ASSERT_NE(fatbin, std::string::npos);
  EXPECT_LT(pre, cicc);
  EXPECT_LT(cicc, ptxas);
  EXPECT_LT(ptxas, fatbin);
  EXPECT_EQ(dev.find("cudafe++"), std::string::npos);
  // Final: the one host compile, writing the planned object.
  EXPECT_NE(split->final_script.find("-o \"/b/obj/k.o\""), std::string::npos);
  EXPECT_EQ(count(split->final_script, "\ngcc "), 1u);
  // Every script stops at its first failing command and has nvcc's environment.
  for (const std::string* s : {&split->host_script, &split->device_script, &split->final_script}) {
    EXPECT_EQ(s->rfind("set -e\n", 0), 0u);
    EXPECT_NE(s->find("export CICC_PATH='/usr/local/cuda/bin/../nvvm/bin'\n"), std::string::npos);
    EXPECT_NE(s->find("export SYSTEM_INCLUDES='\"-isystem\" "), std::string::npos);
  }
}

TEST(NvccSplit, RefusesStepsItDoesNotKnow) {
  std::string dry = kDryRun;
  // No cudafe++ (e.g. a device-only compile).
  std::string no_fe = dry;
  size_t at = no_fe.find("#$ cudafe++");
  no_fe.erase(at, no_fe.find('\n', at) - at + 1);
  EXPECT_FALSE(split_nvcc_steps(no_fe).is_ok());
  // cudafe++ that does not write the module id: nothing to hand both sides.
  EXPECT_FALSE(split_nvcc_steps(replace_all(dry, "--gen_module_id_file ", "")).is_ok());
  // A step of another kind among the device steps (e.g. a device link).
  std::string nvlink = replace_all(dry, "#$ fatbinary ", "#$ nvlink -o x\n#$ fatbinary ");
  EXPECT_FALSE(split_nvcc_steps(nvlink).is_ok());
  // Not a dry run at all.
  EXPECT_FALSE(split_nvcc_steps("nvcc fatal   : Unknown option '-foo'\n").is_ok());
}

TEST(NvccSplit, ModuleIdIsUniquePerObjectAndStable) {
  EXPECT_EQ(nvcc_module_id("0123456789abcdef0123", "softmax.cu"), "_kf0123456789abcdef_softmax_cu");
  EXPECT_NE(nvcc_module_id("aaaaaaaaaaaaaaaa", "k.cu"), nvcc_module_id("bbbbbbbbbbbbbbbb", "k.cu"));
}

// The real runner, noting the last word of every command it starts (the sandbox wraps them).
class RecordingRunner : public PosixProcessRunner {
 public:
  ProcessResult run(const ProcessSpec& spec) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      commands_.push_back(spec.argv.empty() ? "" : spec.argv.back());
    }
    return PosixProcessRunner::run(spec);
  }
  size_t ran(const std::string& suffix) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t n = 0;
    for (const auto& c : commands_) n += ends_with(c, suffix);
    return n;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> commands_;
};

// Real builds: nvcc from PATH or /usr/local/cuda (compiling needs no GPU).
class NvccSplitBuild : public ::testing::Test {
 protected:
  void SetUp() override {
    auto tc = find_toolchain();
    if (!tc || tc->nvcc.empty()) GTEST_SKIP() << "nvcc is not installed";
    nvcc_ = tc->nvcc;
    cuda_root_ = tc->cuda_root;
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_nvcc_split_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    dir_ = *dir;
    ::chmod(dir_.c_str(), 0755);
    fs::create_directories(dir_ / "src");
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // A compile laid out as a candidate's: ROOT/src/k.cu into ROOT/build/obj/k.o.
  BuildPlan plan(const std::string& key, const fs::path& root = {},
                 const std::string& define = "-DKF_SPLIT_TEST") const {
    fs::path dir = root.empty() ? dir_ : root;
    BuildPlan p;
    BuildStep compile;
    compile.label = "compile k.cu";
    compile.output = dir / "build" / "obj" / "k.o";
    compile.argv = {nvcc_,
                    "-std=c++17",
                    "-O3",
                    "-arch=sm_90",
                    define,
                    "-c",
                    (dir / "src" / "k.cu").string(),
                    "-o",
                    compile.output.string()};
    compile.cache_key = "obj-" + key;
    compile.nvcc_split = true;
    p.compiles.push_back(compile);
    p.binary = dir / "build" / "k.a";
    p.link.label = "archive";
    p.link.argv = {"ar", "rcs", p.binary.string(), compile.output.string()};
    p.link.cache_key = "bin-" + key;
    return p;
  }
  BuildLimits limits() const {
    BuildLimits l;
    l.timeout_s = 120;
    l.sandbox.mode = SandboxMode::kAuto;
    l.sandbox.read_only_paths = {dir_ / "src", cuda_root_};
    return l;
  }
  std::string nvcc_;
  fs::path cuda_root_, dir_;
};

TEST_F(NvccSplitBuild, BuildsAnObjectWithTheKernelAndItsRegistration) {
  ASSERT_TRUE(write_file(dir_ / "src" / "k.cu",
                         "__global__ void kf_split_kernel(float* x) { x[threadIdx.x] *= 2.f; }\n"
                         "void launch(float* x) { kf_split_kernel<<<1, 32>>>(x); }\n"));
  RecordingRunner runner;
  BuildOutcome out = run_build(plan("ok"), dir_ / "cache", limits(), runner);
  ASSERT_TRUE(out.ok) << out.error << "\n" << out.output;
  auto object = read_file(dir_ / "cache" / "obj" / "obj-ok.o");
  ASSERT_TRUE(object.is_ok());
  // The host stub of the kernel, the fatbinary's registration and the kernel's SASS name.
  EXPECT_NE(object->find("__device_stub__Z15kf_split_kernelPf"), std::string::npos);
  EXPECT_NE(object->find("__cudaRegisterFatBinary"), std::string::npos);
  EXPECT_NE(object->find("_Z15kf_split_kernelPf"), std::string::npos);
  // Built by the two sides and the final compile, not by nvcc as a whole.
  EXPECT_EQ(runner.ran("host.sh"), 1u);
  EXPECT_EQ(runner.ran("device.sh"), 1u);
  EXPECT_EQ(runner.ran("final.sh"), 1u);
  EXPECT_EQ(runner.ran("/k.o"), 0u);
  // The temporaries are gone.
  EXPECT_FALSE(fs::exists(dir_ / "build" / "obj" / "k.o.nvcc"));
}

TEST_F(NvccSplitBuild, TheDryRunIsListedOncePerCommandAndReusedInAnotherFolder) {
  // A define no other test uses: this process has listed no such command yet.
  std::string define = "-DKF_DRY_RUN_MEMO=" + std::to_string(::getpid()) +
                       std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  RecordingRunner runner;
  for (const char* candidate : {"t01_b00", "t01_b01"}) {
    fs::path root = dir_ / "work" / candidate;
    fs::create_directories(root / "src");
    ASSERT_TRUE(write_file(root / "src" / "k.cu", std::string("__global__ void kf_") + candidate +
                                                      "(float* x) { x[threadIdx.x] += 1.f; }\n"));
    BuildLimits l = limits();
    l.sandbox.read_only_paths.push_back(root / "src");
    BuildOutcome out = run_build(plan(candidate, root, define), dir_ / "cache", l, runner);
    ASSERT_TRUE(out.ok) << out.error << "\n" << out.output;
    // Each object is its own source's, built by the two sides from its own folder's listing.
    auto object = read_file(dir_ / "cache" / "obj" / (std::string("obj-") + candidate + ".o"));
    ASSERT_TRUE(object.is_ok());
    EXPECT_NE(object->find(std::string("kf_") + candidate), std::string::npos);
    EXPECT_FALSE(fs::exists(root / "build" / "obj" / "k.o.nvcc"));
  }
  EXPECT_EQ(runner.ran("k.o.nvcc"), 1u);  // the dry run (its last word is the keep folder)
  EXPECT_EQ(runner.ran("host.sh"), 2u);
  EXPECT_EQ(runner.ran("final.sh"), 2u);
  EXPECT_EQ(runner.ran("/k.o"), 0u);  // never nvcc as a whole
}

TEST_F(NvccSplitBuild, ACompileErrorIsNvccsOwnMessageOnce) {
  ASSERT_TRUE(write_file(dir_ / "src" / "k.cu",
                         "__global__ void k(float* x) { x[threadIdx.x] = undeclared_name; }\n"));
  RecordingRunner runner;
  BuildOutcome out = run_build(plan("bad"), dir_ / "cache", limits(), runner);
  EXPECT_FALSE(out.ok);
  // The split build failed, then nvcc ran as planned for its message.
  EXPECT_EQ(runner.ran("host.sh"), 1u);
  EXPECT_EQ(runner.ran("/k.o"), 1u);
  EXPECT_EQ(count(out.output, "identifier \"undeclared_name\" is undefined"), 1u) << out.output;
}

}  // namespace
}  // namespace kf
