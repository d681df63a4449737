// Hardware profiles by gpu_arch name: they feed prompts, roofline checks and the integrity bound.
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

namespace kf {

struct ArchProfile {
  std::string name;         // canonical name, e.g. "h200"
  std::string vendor;       // "NVIDIA", "Intel", "host"
  std::string description;  // one line for prompts
  std::string cuda_sm;      // "sm_90" where CUDA applies, else ""
  double dram_gbps = 0;     // peak DRAM bandwidth, GB/s (0 = unknown)
  double fp32_tflops = 0;
  double fp16_tflops = 0;    // vector FP16
  double tensor_tflops = 0;  // dense FP16/BF16 tensor peak
  int compute_units = 0;     // SMs / Xe cores / CPU cores
  double l2_mib = 0;
  int shared_kib_per_block = 0;
};

// Looks up a profile by name (case-insensitive; aliases like "Hopper" or "h100" accepted).
// `native` and `cpu` resolve to a profile of the local machine where it can be read.
Result<ArchProfile> find_arch(const std::string& name);
std::vector<std::string> known_arch_names();
// A short human-readable block for prompts and logs.
std::string describe_arch(const ArchProfile& arch);

// The device a run used, as the harness reported it.
struct FoundDevice {
  std::string name;     // the runtime's device name ("NVIDIA H200", "cpu-haswell-...")
  std::string backend;  // "host", "opencl", "cuda", ...
  bool cpu = false;     // a CPU: the host backend, or an OpenCL device of type CPU
  // What the harness read of the device (0 / "" = not said): for a device without a profile.
  std::string cuda_sm;  // "sm_90"
  int compute_units = 0;
  int max_threads_per_group = 0;
  double l2_bytes = 0, local_mem_bytes = 0;
};

// The profile of a device found by `native` that has none in the table: its name, and what the
// harness read of it (compute units, L2, shared/local memory per block or group).
ArchProfile profile_of_found(const FoundDevice& found);

// The profile name of a found device: the known profile whose device names the device's name
// contains, "cpu" for a CPU, else a name made from the device's own ("native-nvidia-rtx-a6000"),
// so that what is stored says where the kernel ran, never the word "native".
std::string arch_name_of(const FoundDevice& found);

// Whether kernels run on `found` may be stored under the arch `claimed`: "" when they may (the
// device is that arch, or `claimed` is native), else what is wrong, naming the device found.
std::string arch_claim_problem(const ArchProfile& claimed, const FoundDevice& found);

}  // namespace kf
