// nvcc's steps for one .cu file, regrouped so the host side (preprocess, cudafe++) and the device
// side (preprocess, cicc, ptxas, fatbinary) run at the same time: nvcc runs them one after the
// other, and on the H200 machine the split build takes 0.59-0.76 s against nvcc's 0.98-1.17 s
// (bench/build_steps.py). The only link between the two sides is the module id file, which
// cudafe++ writes and cicc reads; written beforehand, neither side waits for the other.
#pragma once

#include <filesystem>
#include <string>

#include "util/status.h"

namespace kf {

struct NvccSplit {
  std::string host_script;    // sh: the host preprocess and cudafe++
  std::string device_script;  // sh: the device preprocess, cicc, ptxas, fatbinary
  std::string final_script;   // sh: the host compile of cudafe++'s output (needs both sides)
  std::filesystem::path module_id_file;  // to be written before the two sides start
};

// From the stderr of `nvcc <the step's flags> --dryrun --keep --keep-dir <dir>`: the three
// scripts, or an error when the steps are not the shape this expects (the caller then runs nvcc
// as it is). Each script sets nvcc's environment as the dry run printed it.
Result<NvccSplit> split_nvcc_steps(const std::string& dryrun_output);

// A module id for the translation unit whose object has cache key `key`: unique per source and
// flags, the same for the same build (so the object is reproducible).
std::string nvcc_module_id(const std::string& key, const std::string& source_name);

}  // namespace kf
