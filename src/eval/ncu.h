// Nsight Compute (ncu) for CUDA kernels (eval_config.profile_custom_model /
// profile_original_model): the profiler's command in front of the harness, its raw CSV read back,
// and the figures of one call's kernels condensed into bottleneck text for the eval log (which the
// next prompt shows).
//
// The profiling run is the kernel's binary on one benchmark shape with --profile-one-call: the
// harness opens the CUDA profiler's range (cudaProfilerStart/Stop) around the first timed call
// only, and ncu runs with --profile-from-start off, so it profiles the kernels of that call and
// nothing of the harness's (fills, copies, checks). ncu runs inside the run sandbox, as whoever
// runs the job (no sudo), with the clocks left alone (--clock-control none).
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "arch/arch.h"
#include "eval/profile.h"

namespace kf {

// One profiled kernel launch: what ncu's raw page says of it, the metrics this reads kept (values
// converted: durations in ms, bandwidths in GB/s, sizes in bytes, clocks in GHz).
struct NcuKernel {
  std::string name;  // as ncu names it, printable and at most 120 characters
  std::map<std::string, double> metrics;
};

// At most this many kernels of the call are profiled (ncu --launch-count): each is replayed
// about twenty times, so a call of thousands of launches is cut short, and the summary says so.
constexpr int kNcuMaxKernels = 16;

// The options in front of the command (after the ncu binary): ncu writes its CSV (raw page, the
// sections below) to `csv`.
std::vector<std::string> ncu_arguments(const std::filesystem::path& csv);

// The kernels in `ncu --csv --page raw` output (header row, units row, one row per kernel);
// ncu's own "==PROF==" lines are skipped. Only the metrics the summary reads are kept: the file
// lies in the candidate's writable work directory, so a column it added names nothing the prompt
// repeats. "" in *error when the text had a header; else why nothing was read.
std::vector<NcuKernel> parse_ncu_csv(const std::string& text, std::string* error);

// The call's kernels as JSON (the kernel's profile_json) and a few lines: per kernel (the longest
// first, at most three in detail) duration, launch shape, registers and shared memory;
// throughput against peak (SM, memory, L1, L2, DRAM); achieved against theoretical occupancy and
// what limits it; the main warp stall reasons; the position on `arch`'s roofline; then the hints
// the figures support.
ProfileSummary summarise_ncu(const std::vector<NcuKernel>& kernels, const std::string& shape,
                             const ArchProfile& arch);

}  // namespace kf
