// Templated kernels (prompt.allow_templated, DESIGN.md §7): the dispatcher a candidate writes,
// its combinations read from the code, and the generated entry point that runs one of them.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "lang/lang.h"
#include "task/task.h"
#include "util/status.h"

namespace kf {

// One explicit instantiation the dispatcher lists.
struct TemplateCombination {
  std::vector<std::string> values;  // per tuning parameter: the literal that selects it ("128")
  std::string instantiation;        // as written: "forward_templated<128, true>"
  // Where the dispatcher calls it, with its arguments: [begin, end) in the parsed code, one per
  // call ({0, 0}: the arguments were not found).
  std::vector<std::pair<size_t, size_t>> calls;
};

// The dispatcher: the task's entry point with one trailing parameter per tuning parameter, which
// calls forward_templated<...> for each combination it lists.
struct TemplatedKernel {
  std::vector<std::string> scopes;  // enclosing `namespace x` / `extern "C"`, outermost first
  std::string return_type;          // "void"
  std::string name;                 // the entry point's name, e.g. "row_sums"
  std::vector<std::string> params;  // every parameter as written, default values dropped
  std::vector<std::string> param_names;
  size_t num_tuning = 0;              // the trailing parameters that select a combination
  std::vector<std::string> includes;  // the file's #include lines
  std::vector<TemplateCombination> combinations;

  std::vector<std::string> tuning_names() const;
};

// The most combinations one templated kernel may list: each is a full evaluation, and the
// fastest of many noisy measurements would be a lottery ticket per combination.
constexpr size_t kMaxTemplateCombinations = 64;
// kernelfoundry tune with tune.budget: a larger space, of which only a sample is built and run.
constexpr size_t kMaxTuneCombinations = 4096;
// Why `n` combinations cannot be tuned with `budget` (tune.budget; 0 = all): more than
// kMaxTemplateCombinations need a budget. "" when they can.
std::string unbudgeted_space_problem(size_t n, size_t budget);

// With more combinations than this, a first pass with a short timing ranks them all (each still
// checked in full), and only this many of the fastest correct ones are timed side by side, with
// half the time budget, the chosen one again with the whole budget (evaluator_templated.cpp).
constexpr size_t kTemplateFinalists = 3;

// Reads the dispatcher from a source file's text. nullopt: the code has no call of
// forward_templated<...> (not a templated kernel). An error says what cannot be read (a value
// that is not a literal, instantiations with different numbers of arguments, a static
// dispatcher), naming the instantiation.
Result<std::optional<TemplatedKernel>> parse_templated(
    const std::string& code, size_t max_combinations = kMaxTemplateCombinations);

// The combination as --template-params takes it: {"chunk": 4096, "unroll": 8} (booleans as JSON
// booleans, other literals as numbers).
nlohmann::json combination_params(const TemplatedKernel& kernel, const TemplateCombination& combo);
// "chunk=4096, unroll=8".
std::string combination_label(const TemplatedKernel& kernel, const TemplateCombination& combo);

// The file name of the generated entry point: kf_templated_entry.cpp, or .cu for CUDA.
std::string templated_entry_file(Language language);
// Whether a package-relative path names a generated entry point (of either language).
bool is_templated_entry_file(const std::string& path);
// Its source: the task's entry point (the dispatcher without its tuning parameters), calling the
// dispatcher with kernelfoundry::template_param(name, fallback) for each tuning parameter, so one
// build runs any combination named by the harness's --template-params; `fallback` when none is.
std::string templated_entry_source(const TemplatedKernel& kernel,
                                   const TemplateCombination& fallback);

// A templated kernel found in a candidate: the file holding its dispatcher, package-relative.
struct TemplatedSource {
  std::string file;
  TemplatedKernel kernel;
};

// The templated kernel among the package's C++ and CUDA EVOLVE files (.cpp, .cc, .cxx, .cu, .h,
// .hpp, .cuh) with `changed` applied (the first file with a dispatcher); nullopt when there is
// none (OpenCL C and Python files are never read), an error when one cannot be read.
Result<std::optional<TemplatedSource>> find_templated(
    const TaskPackage& task, const std::map<std::string, std::string>& changed,
    size_t max_combinations = kMaxTemplateCombinations);
// Where the generated entry point goes: beside the dispatcher's file, so its #include lines
// resolve as they do there.
std::string templated_entry_path(const TemplatedSource& source, Language language);

// The combinations' results (EvalResult::template_results, stored as template_results_json) in
// a few words each, one line per combination, the chosen one marked: for prompts and logs.
// "" for anything that is not a non-empty array.
std::string template_results_text(const nlohmann::json& results);

}  // namespace kf

namespace kf {

// A kernel the device compiler refused for a limit of the device, as the build log names it
// (ptxas: "Entry function '...' uses too much shared data (0x10000 bytes, 0xc000 max)").
struct OverLimitKernel {
  std::string symbol;  // as the log names it (mangled)
  std::string name;    // demangled, "void k<16384>(float*)"
  std::string detail;  // "uses too much shared data (0x10000 bytes, 0xc000 max)"
};
std::vector<OverLimitKernel> over_limit_kernels(const std::string& build_log);

// A run refused at launch for a limit of the device, as the harness reports the CUDA runtime's
// error ("too many resources requested for launch (cudaErrorLaunchOutOfResources)": registers
// or threads per block; "invalid configuration argument (cudaErrorInvalidConfiguration)": block
// or grid dimensions): that message, else "" (any other failure).
std::string launch_limit_error(const std::string& reason);

// The combinations that instantiate the kernel `kernel_name` (demangled): those whose values are
// its template arguments, else those holding them as a run; none when its arguments are not
// literals.
std::vector<size_t> combinations_instantiating(const TemplatedKernel& k,
                                               const std::string& kernel_name);

// The dispatcher's file without the `skip` combinations' instantiations: each of their calls
// becomes a call that throws, typed by decltype of the original (which instantiates no
// definition), so the rest builds. nullopt when a call's place is not known.
std::optional<std::string> without_combinations(const std::string& code, const TemplatedKernel& k,
                                                const std::vector<size_t>& skip);

}  // namespace kf
