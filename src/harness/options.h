// The task binary's command line: the protocol the evaluator drives (see usage_text()).
#pragma once

#include <string>
#include <vector>

namespace kernelfoundry {

enum class Phase { Correctness, Benchmark, All };
const char* phase_name(Phase phase);

struct Options {
  bool ref = false;  // the reference is the implementation under test
  Phase phase = Phase::All;
  int seeds = 3;
  // Shapes whose buffers total more than this are checked with one seed (the highest) in the
  // correctness phase; the benchmark phase checks them again on seed 1. 0 = all seeds everywhere.
  double large_shape_mib = 64;
  std::string out;              // result JSON path; empty: none
  std::string params_file;      // JSON object
  std::string template_params;  // JSON object text, or a file holding one
  std::string kernel_dir = ".";
  double noise = 0.005;
  long min_samples = 10;
  long max_samples = 2000;
  double time_budget = 2.0;  // seconds per benchmark shape
  double warmup_time = 0.05;
  long warmup_iters = 3;
  bool warm = false;     // no cache flush before samples
  double peak_gbps = 0;  // > 0: flag results faster than this bandwidth allows
  std::string shape;     // non-empty: benchmark only the shape with this id
  // "CTL,ACK": perf stat's control FIFOs (perf stat --control fifo:CTL,ACK -D -1): counting is
  // enabled around each shape's timed calls only, so setup, warm-up and checks are left out.
  std::string perf_control;
  // A profiling run under Nsight Compute (ncu --profile-from-start off): the CUDA profiler's range
  // (cudaProfilerStart/Stop) covers the first timed call of the shape only, so ncu profiles the
  // kernels of one call, never the harness's fills, copies or checks; CUPTI timing stays off, ncu
  // being the only CUPTI client in the process.
  bool profile_one_call = false;
  // The split judge (DESIGN.md §6.2): the reference child writes its outputs to expected_out;
  // the candidate child runs no reference and writes its outputs to dump_dir; the checker (the
  // reference binary, holding no candidate code) compares check_dir against expected_dir.
  std::string expected_out;
  std::string dump_dir;
  std::string check_dir;
  std::string expected_dir;
  // The judge of a whole job (--serve): checks requested on stdin one per line, against
  // expected_dir, with the reference's outputs and inputs kept in memory up to cache_mib
  // (< 0: a quarter of the machine's memory, at most 4 GiB).
  bool serve = false;
  // The correctness phase checks the correctness shapes (and --extra-shapes) only, not the
  // benchmark shapes (a compute-sanitizer pass, where a large shape costs minutes).
  bool no_benchmark_shapes = false;
  double cache_mib = -1;
  // The paced benchmark (pace.h): the candidate child's timed calls run in batches the evaluator
  // starts through these two FIFOs, each next to a batch of the reference's (--dump-dir only).
  std::string pace_in, pace_out;
  // A templated kernel's first pass (--sweep FILE): one child checks and briefly times several
  // combinations in turn. FILE holds [{"template_params": {...}, "out": F, "dump_dir": D}, ...];
  // each combination gets its own result file and dump, as a run with --template-params,
  // --out and --dump-dir would. The benchmark shapes' inputs are set up once for all of them.
  std::string sweep;
  std::string extra_shapes;  // JSON list of hidden correctness shapes ([{"dims": {...}}, ...])
  bool list = false;
  bool help = false;
};

// Parses argv[1..] (accepts "--key value" and "--key=value"). On failure returns false with a
// message that names the option (and the nearest valid one for a typo).
bool parse_options(const std::vector<std::string>& args, Options* out, std::string* err);
std::string usage_text(const std::string& program);

}  // namespace kernelfoundry
