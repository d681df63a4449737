// The result of one run of a task binary: what the evaluator reads (JSON, written atomically) and
// the short human summary that becomes part of the eval log.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "harness/timing.h"
#include "kernelfoundry/compare.h"

namespace kernelfoundry {

enum class Status { Pass, Wrong, ShapeMismatch, Error };
const char* status_name(Status status);  // "pass", "wrong", "shape_mismatch", "error"
int exit_code(Status status);            // 0, 1, 1, 2
// Exit code when the result file cannot be written (disk full, read-only path, file size limit):
// a fault of the machine, not of the implementation under test.
constexpr int kExitCannotWriteResult = 3;

struct CaseRecord {
  std::string phase;  // "correctness" or "benchmark"
  std::string shape;
  int seed = 0;
  int call = 0;
  std::string output;
  Status status = Status::Pass;
  std::string message;
  bool compared = false;  // cmp and tol are meaningful
  CompareResult cmp;
  Tolerance tol;
};

struct Flag {
  std::string flag;
  std::string detail;  // of the first occurrence
  int count = 1;
};

struct ShapeTiming {
  std::string shape;
  std::vector<double> device_ms;
  std::vector<double> host_ms;
  SampleStats stats;
  double host_median_ms = 0;
  double bytes = 0;  // inputs + outputs
  bool converged = false;
  StopReason stop = StopReason::None;
  long warmup_calls = 0;
  double warmup_estimate_ms = 0;  // the warm-up calls' median
  bool device_timed = true;       // false: the backend had no device timestamps (host time used)
  long cupti_samples = 0;         // CUDA: samples read from CUPTI records (the rest from events)
};

struct Report {
  std::string impl = "candidate";
  std::string backend;
  std::string device;
  std::vector<std::pair<std::string, std::string>> device_info;
  std::string benchmark;
  std::vector<std::string> argv;
  // The KF_HARNESS_* variables set in this process's environment when main began (name=value):
  // the evaluator never passes them to a candidate, so one here was put there by the evaluator
  // itself (a sanitizer pass) or by code that ran before main.
  std::vector<std::string> env_switches;
  std::string params_json = "{}";
  std::string template_params_json = "{}";
  bool cold = true;

  Status status = Status::Pass;
  std::string reason;
  std::string error_kind;  // with status error: compile, device, out_of_bounds, exception, ...
  std::string error_log;   // full text (compiler log) when it does not fit a reason line

  std::vector<CaseRecord> cases;
  std::vector<Flag> flags;
  std::vector<ShapeTiming> timings;
  std::vector<std::pair<std::string, double>> phase_seconds;
  double sampled_ms_total = 0;
  bool finished = false;  // false while a phase runs: the file then says the run stopped early

  bool failed() const { return status != Status::Pass; }
  // The first failure decides the status; later ones are ignored.
  void fail(Status s, const std::string& why, const std::string& kind = "");
  // Flags repeat per shape/seed; one entry per flag name keeps the file short.
  void add_flag(const std::string& flag, const std::string& detail);
};

std::string report_json(const Report& report);
// Writes via a temporary file and rename, so a reader never sees half a file. Every write, flush,
// close and the rename are checked; `err` then names the path and the errno text.
bool write_report(const std::string& path, const Report& report, std::string* err);
// strerror(err), noting what ENOSPC, EDQUOT, EROFS and EFBIG mean.
std::string write_error_text(int err);

}  // namespace kernelfoundry
