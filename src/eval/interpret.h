// Turns what the test child did (its exit, its result file) into a verdict, a reason and timings.
#pragma once

#include <nlohmann/json.hpp>

#include "eval/eval.h"
#include "proc/process.h"

namespace kf {

// Fills verdict, reason, timings, flags and harness from the child's outcome. `result` is the
// parsed result file, or null when the child wrote none (or an unreadable one).
void interpret_test_run(const ProcessResult& proc, const nlohmann::json& result, EvalResult& out);

// Speedup per shape is reference median / candidate median; the geometric mean over the shapes
// both have. Empty when they share none.
std::optional<double> geomean_speedup(const std::map<std::string, ShapeTiming>& reference,
                                      const std::map<std::string, ShapeTiming>& candidate);

// Adds a flag {flag, detail, suspect} unless the same flag is already there.
void add_flag(EvalResult& result, const std::string& flag, const std::string& detail, bool suspect);

// A string / finite number member of a JSON object read from an untrusted file; "" / 0 when the
// value is missing or of another type (where nlohmann's value() would throw).
std::string json_text(const nlohmann::json& object, const char* key);
double json_number(const nlohmann::json& object, const char* key);

// Harness flags that mean a timing can't be trusted as a win.
bool is_suspect_flag(const std::string& flag);

// A correct result timed side by side on a busy machine (flag machine_busy) whose interval lies
// wholly above 1: the one to measure again before it is called faster (Evaluator::evaluate).
// Under load the scheduler can favour one side for a whole run, not per pair, so such an
// interval is not the guarantee it is on an idle machine.
bool faster_on_a_busy_machine(const EvalResult& result);

// A result file a child wrote, as JSON; null when it is missing, not JSON or over 64 MiB (the
// child may be a candidate's: its size is not trusted).
nlohmann::json read_json_file(const std::filesystem::path& path);

}  // namespace kf
