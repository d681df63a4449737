// Evaluator::sanitize: the compute-sanitizer pass on a CUDA candidate about to become the job's
// best, in the candidate's own run sandbox, with its findings turned into a suspect flag.
#include <chrono>

#include "eval/eval.h"
#include "eval/interpret.h"
#include "eval/isolation.h"
#include "eval/sanitizer.h"
#include "proc/sandbox.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kf {
namespace {

// Whether the cached binary still holds what the build stored (its SHA-256 is kept beside it,
// lang/build_cache.cpp): the pass must check the kernel that was judged, not a replaced file.
bool binary_intact(const fs::path& binary) {
  fs::path hash_file = binary;
  hash_file += ".sha256";
  auto recorded = read_file(hash_file);
  auto bytes = read_file(binary);
  return recorded && bytes && trim(*recorded) == sha256_hex(*bytes);
}

// The folders compute-sanitizer runs from (the tool may be a symlink into the CUDA root).
std::vector<fs::path> tool_dirs(const fs::path& tool) {
  std::vector<fs::path> dirs = {tool.parent_path()};
  std::error_code ec;
  fs::path real = fs::canonical(tool, ec);
  if (!ec && real.parent_path() != tool.parent_path()) dirs.push_back(real.parent_path());
  return dirs;
}

}  // namespace

void Evaluator::sanitize(EvalResult& r) {
  if (options_.sanitizer_path.empty() || options_.language != Language::kCuda) return;
  if (r.verdict != kCorrect || r.binary.empty() || !r.environment_error.empty()) return;
  // The cache names a binary by the hash of everything it was linked from: the same kernel is
  // the same name.
  // A templated kernel's combinations share one binary: each is checked as the one it runs.
  std::string key = r.binary.filename().string() +
                    (r.template_params.is_object() ? " " + r.template_params.dump() : "");
  SanitizeOutcome outcome;
  bool seen = false;
  {
    std::lock_guard<std::mutex> lock(sanitize_mutex_);
    if (auto it = sanitized_.find(key); it != sanitized_.end()) {
      outcome = it->second;
      seen = true;
    }
  }
  if (!seen) {
    auto start = std::chrono::steady_clock::now();
    if (!binary_intact(r.binary)) {
      outcome.flags.push_back(
          {{"flag", "sanitizer_incomplete"},
           {"detail", "the cached binary " + r.binary.string() +
                          " changed on disk since it was built (or has no recorded hash); it was "
                          "not run under compute-sanitizer"},
           {"suspect", false}});
      outcome.log_lines.push_back("not run: the cached binary changed since it was built");
    }
    for (const std::string& tool :
         outcome.flags.empty() ? options_.sanitizer_tools : std::vector<std::string>{}) {
      fs::path work = r.dir / ("sanitize-" + tool);
      std::error_code ec;
      fs::remove_all(work, ec);
      if (Status s = make_dirs(work / "tmp"); !s) {
        outcome.flags.push_back({{"flag", "sanitizer_incomplete"},
                                 {"detail", "cannot create the work directory of the " + tool +
                                                " pass: " + s.message()},
                                 {"suspect", false}});
        outcome.log_lines.push_back(tool + ": not run: " + s.message());
        continue;
      }
      SanitizerRun run;
      run.tool = options_.sanitizer_path;
      run.tool_name = tool;
      run.binary = r.binary;
      run.kernel_dir = r.dir / "src";
      run.work_dir = work;
      run.extra_shapes = extra_shapes_json_;
      if (r.template_params.is_object()) run.template_params = r.template_params.dump();
      run.large_shape_mib = options_.large_shape_mib;
      run.timeout_s = options_.sanitizer_timeout_s;
      run.output_cap = options_.max_output_bytes;
      // The candidate's own run sandbox, with the tool readable; the CPU limit follows the
      // pass's longer timeout.
      SandboxOptions sandbox =
          run_sandbox(options_, run.kernel_dir, run.binary, tool_dirs(run.tool));
      sandbox.cpu_limit_s = options_.cpu_time_limit_s > 0 ? options_.cpu_time_limit_s
                                                          : 4 * options_.sanitizer_timeout_s;
      ProcessResult proc;
      {
        std::unique_lock<std::mutex> device;
        if (options_.device_lock) device = std::unique_lock<std::mutex>(*options_.device_lock);
        proc = runner_.run(sandboxed(sanitizer_spec(run), sandbox));
      }
      SanitizerReport report = parse_sanitizer_output(proc.output, tool);
      SanitizerOutcome judged = judge_sanitizer_run(proc, report, tool, run.timeout_s);
      outcome.log_lines.push_back(judged.log_line + strprintf(" (%.1f s)", proc.wall_s));
      if (!judged.flag.empty())
        outcome.flags.push_back(
            {{"flag", judged.flag}, {"detail", judged.detail}, {"suspect", judged.suspect}});
      fs::remove_all(work / "outputs", ec);  // the dumped outputs are not needed
    }
    r.sanitize_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::lock_guard<std::mutex> lock(sanitize_mutex_);
    sanitized_.emplace(key, outcome);
  }

  bool suspect = false;
  for (const auto& f : outcome.flags) {
    add_flag(r, f.value("flag", ""), f.value("detail", ""), f.value("suspect", false));
    suspect = suspect || f.value("suspect", false);
  }
  if (suspect) score(r);  // the speedup no longer counts in the fitness; the reason says so
  // The log was written before the pass: its verdict line follows the new reason, and the pass
  // gets its own section.
  std::string verdict_line =
      strprintf("verdict: %d (%s): %s", r.verdict, std::string(verdict_name(r.verdict)).c_str(),
                r.reason.c_str());
  size_t eol = r.eval_log.find('\n');
  r.eval_log = verdict_line + (eol == std::string::npos ? "\n" : r.eval_log.substr(eol));
  if (!ends_with(r.eval_log, "\n")) r.eval_log += "\n";
  r.eval_log += "\n== compute-sanitizer" +
                std::string(seen ? " (this binary was checked before)" : "") + "\n";
  for (const std::string& line : outcome.log_lines) r.eval_log += "- " + line + "\n";
  r.reason = escape_invalid_utf8(r.reason);
  r.eval_log = escape_invalid_utf8(r.eval_log);
}

}  // namespace kf
