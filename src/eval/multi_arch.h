// Evaluation on several archs in one job (gpu_arch: a,b,c): one Evaluator per arch, each on the
// device its arch_targets entry selects and with its own reference timing, and a candidate's
// results on all of them merged into one (worst verdict, geometric-mean speedup over every
// (arch, benchmark shape)). With one arch it is the Evaluator alone.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "eval/eval.h"

namespace kf {

// Where an arch's kernels run: the environment the harness is given to select the device.
// Written `NAME=cuda:N` (CUDA device N: CUDA_VISIBLE_DEVICES=N) or
// `NAME=opencl:PLATFORM[:DEVICE]` (the OpenCL platform whose name contains PLATFORM, any case,
// and its device number DEVICE, from 0: KF_OPENCL_PLATFORM, KF_OPENCL_DEVICE).
struct ArchTarget {
  std::string arch;  // the gpu_arch entry it serves
  std::string spec;  // as written after '='
  std::vector<std::pair<std::string, std::string>> env;
};

// One entry of arch_targets; the error names the entry and the accepted forms.
Result<ArchTarget> parse_arch_target(const std::string& entry);

// The profile name of a gpu_arch entry: an entry may carry a label after '/', so that two devices
// of one kind can both be targets (`cpu/basic`, `cpu/pthread`; `h100/0`, `h100/1`).
std::string arch_profile_name(const std::string& arch);

// One arch of a job.
struct ArchLane {
  std::string name;  // the gpu_arch entry (label included)
  ArchProfile arch;
  std::vector<std::pair<std::string, std::string>> env;  // empty: the job's own environment
  std::string target;  // its arch_targets entry after '=' ("" = none: the job's environment)
};

// Merges one candidate's results on several archs (in lane order; each with its `arch` set):
// verdict = the worst, with the reason (and any environment error) of the first arch that has it,
// prefixed by the arch; speedup = the geometric mean over every (arch, benchmark shape), each
// arch's speedup weighing by its number of timed shapes; the interval = the same mean of the
// archs' bounds, its confidence by the union bound (1 - sum of the archs' 1 - c); flags of every
// arch, their detail prefixed by the arch; the eval log one section per arch; times summed.
// The inputs are kept as the result's per_arch.
EvalResult merge_arch_results(std::vector<EvalResult> per_arch);

// {arch: runtimes} of a result: each arch's for a merged one, else {gpu_arch: its own}.
nlohmann::json arch_runtimes_json(const EvalResult& result, const std::string& gpu_arch);

// The evaluators of a job, one per lane.
class ArchEvaluators {
 public:
  // With several lanes each gets its own work directory (work_root/<arch>) and device
  // environment; the device lock and the build pause stay shared, so timing on one device never
  // overlaps a build or a run on another. `reference` (reference_gpu_arch, when given): the arch
  // whose device runs every lane's reference (unless it is the lane's own).
  ArchEvaluators(const TaskPackage& task, const EvalOptions& options,
                 const std::vector<ArchLane>& lanes, const Toolchain& toolchain,
                 ProcessRunner& runner, const ArchLane* reference = nullptr);

  size_t size() const { return evaluators_.size(); }
  Evaluator& lane(size_t i) { return *evaluators_[i]; }
  const std::string& name(size_t i) const { return names_[i]; }

  // Every lane's reference, in lane order; the error of the first that fails, naming its arch.
  // `failed_lane` (when given) is set to that lane's index.
  Result<std::vector<EvalResult>> prepare_references(size_t* failed_lane = nullptr);
  EvalResult evaluate(const std::string& work_id,
                      const std::map<std::string, std::string>& changed);
  void sanitize(EvalResult& result);
  void profile(EvalResult& result);

 private:
  template <typename F>
  void each_lane(EvalResult& result, F&& f);
  // The lanes' results merged, with a note when a result ended the evaluation before the last.
  EvalResult merged(std::vector<EvalResult> parts) const;
  std::vector<std::unique_ptr<Evaluator>> evaluators_;
  std::vector<std::string> names_;
};

}  // namespace kf
