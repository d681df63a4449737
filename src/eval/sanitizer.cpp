// compute-sanitizer passes: the tool's lookup, the command around a task binary, and the reading of
// its report (see sanitizer.h).
#include "eval/sanitizer.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "util/strings.h"

namespace kf {

namespace fs = std::filesystem;

Result<SanitizerMode> parse_sanitizer_mode(std::string_view text) {
  if (text == "auto") return SanitizerMode::kAuto;
  if (text == "on") return SanitizerMode::kOn;
  if (text == "off") return SanitizerMode::kOff;
  return Result<SanitizerMode>::error("eval_config.compute_sanitizer: '" + std::string(text) +
                                      "' is not one of auto, on, off");
}

std::string_view sanitizer_mode_name(SanitizerMode mode) {
  switch (mode) {
    case SanitizerMode::kAuto:
      return "auto";
    case SanitizerMode::kOn:
      return "on";
    case SanitizerMode::kOff:
      return "off";
  }
  return "?";
}

const std::vector<std::string>& sanitizer_tool_names() {
  static const std::vector<std::string> names = {"memcheck", "racecheck", "initcheck", "synccheck"};
  return names;
}

namespace {

bool is_executable_file(const fs::path& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::is_regular_file(status)) return false;
  return (status.permissions() & (fs::perms::owner_exec | fs::perms::group_exec |
                                  fs::perms::others_exec)) != fs::perms::none;
}

fs::path on_path(const std::string& name, std::string_view path_env) {
  for (const std::string& dir : split(path_env, ':')) {
    if (dir.empty()) continue;
    fs::path p = fs::path(dir) / name;
    if (is_executable_file(p)) return p;
  }
  return {};
}

}  // namespace

fs::path find_compute_sanitizer(const Toolchain& toolchain, std::string_view path_env) {
  if (fs::path p = on_path("compute-sanitizer", path_env); !p.empty()) return p;
  std::vector<fs::path> roots;
  if (!toolchain.cuda_root.empty()) roots.push_back(toolchain.cuda_root);
  // nvcc's CUDA root: the folder above its bin/ (through symlinks, as /usr/bin/nvcc often is).
  fs::path nvcc = toolchain.nvcc;
  if (!nvcc.has_parent_path()) nvcc = on_path(toolchain.nvcc, path_env);
  if (!nvcc.empty()) {
    std::error_code ec;
    roots.push_back(nvcc.parent_path().parent_path());
    fs::path real = fs::canonical(nvcc, ec);
    if (!ec) roots.push_back(real.parent_path().parent_path());
  }
  for (const fs::path& root : roots) {
    for (const fs::path& p :
         {root / "compute-sanitizer" / "compute-sanitizer", root / "bin" / "compute-sanitizer"})
      if (is_executable_file(p)) return p;
  }
  return {};
}

Result<SanitizerSetup> check_sanitizer(SanitizerMode mode, Language language,
                                       const std::vector<std::string>& tools,
                                       const fs::path& found) {
  SanitizerSetup setup;
  if (mode == SanitizerMode::kOff || language != Language::kCuda) return setup;
  for (const std::string& t : tools) {
    const auto& names = sanitizer_tool_names();
    if (std::find(names.begin(), names.end(), t) == names.end()) {
      std::string near = nearest(t, names);
      return Result<SanitizerSetup>::error(
          "eval_config.sanitizer_tools: '" + t + "' is not a compute-sanitizer tool (one of " +
          join(names, ", ") + ")" + (near.empty() ? "" : "; did you mean '" + near + "'?"));
    }
  }
  if (tools.empty()) {
    if (mode == SanitizerMode::kOn)
      return Result<SanitizerSetup>::error(
          "eval_config.compute_sanitizer is on but eval_config.sanitizer_tools lists no tool: "
          "name one or more of " +
          join(sanitizer_tool_names(), ", "));
    return setup;
  }
  if (found.empty()) {
    if (mode == SanitizerMode::kOn)
      return Result<SanitizerSetup>::error(
          "eval_config.compute_sanitizer is on, but compute-sanitizer was found neither on PATH "
          "nor under the CUDA root (<root>/compute-sanitizer/ or <root>/bin/). Install the CUDA "
          "toolkit's compute-sanitizer, put it on PATH, or set eval_config.compute_sanitizer: "
          "auto to run without it");
    setup.note =
        "note: compute-sanitizer was not found on PATH or under the CUDA root: the job's best "
        "kernel is not checked with " +
        join(tools, "/") +
        " (eval_config.compute_sanitizer: auto). Install it with the CUDA toolkit, or set "
        "eval_config.compute_sanitizer: off to silence this.";
    return setup;
  }
  setup.tool = found;
  return setup;
}

namespace {

std::string num(double v) {
  return strprintf("%g", v);
}

}  // namespace

ProcessSpec sanitizer_spec(const SanitizerRun& run) {
  ProcessSpec spec;
  fs::path out = run.work_dir / "result.json";
  fs::path dump = run.work_dir / "outputs";
  spec.argv = {run.tool.string(), "--tool", run.tool_name, "--error-exitcode",
               std::to_string(kSanitizerErrorExitCode),
               // The first reports say what is wrong; thousands of threads repeat them.
               "--print-limit", "20", "--show-backtrace", "no",
               // Device-side memory and hazards are the point: a failing CUDA call is the
               // harness's to report, as in any run.
               "--report-api-errors", "no", run.binary.string(), "--phase", "correctness", "--out",
               out.string(), "--kernel-dir", run.kernel_dir.string(), "--dump-dir", dump.string(),
               "--seeds", "1", "--large-shape-mib", num(run.large_shape_mib),
               // The task's correctness shapes and the hidden ones near them: a benchmark shape
               // under racecheck takes many minutes (a 4096x4096x1024 matmul ran over 7).
               "--no-benchmark-shapes"};
  if (!run.template_params.empty()) {
    spec.argv.push_back("--template-params");
    spec.argv.push_back(run.template_params);
  }
  if (!run.extra_shapes.empty()) {
    spec.argv.push_back("--extra-shapes");
    spec.argv.push_back(run.extra_shapes);
  }
  spec.env.push_back({kNoGuardBytesEnv, "1"});
  spec.work_dir = run.work_dir;
  spec.timeout_s = run.timeout_s;
  // The tool is silent while it instruments and checks: only the wall-clock limit applies.
  spec.inactivity_timeout_s = 0;
  spec.output_cap = run.output_cap;
  return spec;
}

namespace {

constexpr std::string_view kPrefix = "=========";

// The part of a kernel's location text that names it: "softmax_rows" from
// "softmax_rows(const float *, float *, int, int)+0x1d0 in softmax.cu:42",
// "0x1d0 in /src/softmax.cu:42:void softmax_rows<float>(...)" or "0x1d0 in softmax_rows(...)".
std::string kernel_of(const std::string& text) {
  size_t paren = text.find('(');
  if (paren == std::string::npos) return "";
  std::string head = text.substr(0, paren);
  // The last word before the parameter list ("void softmax<float>" -> "softmax<float>"); a
  // template argument list may hold spaces, so words are split outside <...> only.
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < head.size(); ++i) {
    char c = head[i];
    if (c == '<') ++depth;
    if (c == '>' && depth > 0) --depth;
    if (c == ' ' && depth == 0) start = i + 1;
  }
  std::string name = head.substr(start);
  // "file.cu:42:name": the name follows the line number.
  for (size_t i = name.size(); i-- > 1;) {
    if (name[i] == ':' && name[i - 1] != ':' && (i + 1 >= name.size() || name[i + 1] != ':') &&
        std::isdigit(static_cast<unsigned char>(name[i - 1]))) {
      size_t j = i;
      while (j > 0 && std::isdigit(static_cast<unsigned char>(name[j - 1]))) --j;
      if (j > 0 && name[j - 1] == ':') return name.substr(i + 1);
    }
  }
  return name;
}

// "softmax.cu:42" from "... in /work/run/src/softmax.cu:42" or "... in /src/softmax.cu:42:name(";
// else the offset ("+0x1d0") when the text has one; else "".
std::string place_of(const std::string& text) {
  for (size_t at = text.find(" in "); at != std::string::npos; at = text.find(" in ", at + 1)) {
    std::string rest = text.substr(at + 4);
    size_t colon = rest.find(':');
    if (colon == std::string::npos || colon == 0) continue;
    size_t end = colon + 1;
    while (end < rest.size() && std::isdigit(static_cast<unsigned char>(rest[end]))) ++end;
    if (end == colon + 1) continue;
    std::string file = rest.substr(0, colon);
    if (file.find('(') != std::string::npos || file.find(' ') != std::string::npos) continue;
    return fs::path(file).filename().string() + rest.substr(colon, end - colon);
  }
  size_t plus = text.find(")+0x");
  if (plus != std::string::npos) {
    size_t end = plus + 4;
    while (end < text.size() && std::isxdigit(static_cast<unsigned char>(text[end]))) ++end;
    return text.substr(plus + 1, end - plus - 1);
  }
  return "";
}

bool is_header(const std::string& line) {
  for (const char* start : {"Invalid ",
                            "Misaligned ",
                            "Out-of-range ",
                            "Error: Race reported",
                            "Warning: Race reported",
                            "ERROR: Potential",
                            "WARNING: Potential",
                            "Error: Potential",
                            "Warning: Potential",
                            "Malloc/Free error",
                            "Program hit ",
                            "Hardware exception",
                            "Illegal ",
                            "Warp ",
                            "Uninitialized ",
                            "Barrier error",
                            "Cuda API error",
                            "Leaked ",
                            "Lane User Stack Overflow",
                            "Stack overflow",
                            "Unspecified exception"})
    if (starts_with(line, start)) return true;
  return false;
}

// Lines that belong to no finding and say nothing about one.
bool is_noise(const std::string& line) {
  for (const char* start :
       {"Saved host backtrace", "Host Frame", "Device Frame", "in /", "COMPUTE-SANITIZER",
        "Target application returned", "This can happen", "Process ID", "LEAK SUMMARY"})
    if (starts_with(line, start)) return true;
  return line.empty();
}

long leading_number(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && text[i] == ' ') ++i;
  size_t j = i;
  while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
  if (j == i || j - i > 12) return -1;
  return std::stol(text.substr(i, j - i));
}

// "N errors, M warnings" (racecheck) or "N errors" in the text after a summary's colon.
void read_summary(const std::string& line, SanitizerReport& report) {
  if (starts_with(line, "ERROR SUMMARY:")) {
    long n = leading_number(line.substr(14));
    if (n >= 0) report.errors = n;
    return;
  }
  // "RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)"
  size_t open = line.find('(');
  if (open == std::string::npos) {
    long n = leading_number(line.substr(line.find(':') + 1));
    if (n >= 0) report.errors = n;
    return;
  }
  long errors = leading_number(line.substr(open + 1));
  size_t comma = line.find(',', open);
  long warnings = comma == std::string::npos ? 0 : leading_number(line.substr(comma + 1));
  if (errors >= 0) report.errors = errors;
  if (warnings >= 0) report.warnings = warnings;
}

}  // namespace

std::string SanitizerFinding::describe() const {
  std::string out = kind;
  if (!kernel.empty()) out += " in kernel " + kernel;
  if (!location.empty())
    out += (kernel.empty() ? " at " : " (") + location + (kernel.empty() ? "" : ")");
  std::vector<std::string> parts;
  for (const std::string& d : details) parts.push_back(d);
  if (!parts.empty()) out += ": " + join(parts, ", ");
  if (repeats > 1) out += strprintf(" [reported %d times, by other threads too]", repeats);
  return out;
}

SanitizerReport parse_sanitizer_output(std::string_view output, const std::string& tool,
                                       size_t max_findings) {
  SanitizerReport report;
  report.tool = tool;
  std::vector<SanitizerFinding> all;
  SanitizerFinding* current = nullptr;
  for (const std::string& raw : split_lines(output)) {
    std::string line = raw;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!starts_with(line, kPrefix)) continue;  // the program's own output
    std::string body = trim(std::string_view(line).substr(kPrefix.size()));
    if (starts_with(body, "ERROR SUMMARY:") || starts_with(body, "RACECHECK SUMMARY:") ||
        starts_with(body, "INITCHECK SUMMARY:") || starts_with(body, "SYNCCHECK SUMMARY:")) {
      read_summary(body, report);
      current = nullptr;
      continue;
    }
    if (is_header(body)) {
      SanitizerFinding f;
      f.tool = tool;
      f.error = !(starts_with(body, "Warning") || starts_with(body, "WARNING"));
      // racecheck puts the first access on the header line: "Error: Race reported between
      // Write access at k(float *)+0x1f0 in k.cu:30".
      size_t at = body.find(" at ");
      if (at != std::string::npos &&
          (starts_with(body, "Error: Race") || starts_with(body, "Warning: Race") ||
           starts_with(body, "ERROR: Potential") || starts_with(body, "WARNING: Potential"))) {
        f.kind = body.substr(0, at);
        std::string where = body.substr(at + 4);
        f.kernel = kernel_of(where);
        f.location = place_of(where);
      } else {
        f.kind = body;
        while (!f.kind.empty() && (f.kind.back() == ':' || f.kind.back() == ' ')) f.kind.pop_back();
      }
      all.push_back(std::move(f));
      current = &all.back();
      continue;
    }
    if (current == nullptr || is_noise(body)) continue;
    if (starts_with(body, "at ") && current->kernel.empty() && current->location.empty()) {
      std::string where = body.substr(3);
      current->kernel = kernel_of(where);
      current->location = place_of(where);
      continue;
    }
    // Threads, addresses, allocations, the other access of a race: the first few lines.
    if (current->details.size() < 4) current->details.push_back(body);
  }
  report.reports = static_cast<int>(all.size());
  for (SanitizerFinding& f : all) {
    auto same = std::find_if(report.findings.begin(), report.findings.end(), [&](const auto& g) {
      return g.kind == f.kind && g.kernel == f.kernel && g.location == f.location;
    });
    if (same != report.findings.end()) {
      ++same->repeats;
    } else if (report.findings.size() < max_findings) {
      report.findings.push_back(std::move(f));
    }
  }
  return report;
}

namespace {

// What to change, by the kind of the first finding.
std::string advice_for(const SanitizerFinding& f) {
  const std::string& k = f.kind;
  if (starts_with(k, "Invalid __global__") || starts_with(k, "Out-of-range"))
    return "guard every global load and store with the bounds check of its index (index < "
           "length), also loads whose value is unused, masked or multiplied by 0: an access past "
           "the end of a buffer reads or writes memory the kernel does not own and can fault on "
           "other shapes and devices";
  if (starts_with(k, "Invalid __shared__"))
    return "keep every shared-memory index below the size of its __shared__ array (check the "
           "array size against blockDim and the tile size)";
  if (starts_with(k, "Invalid __local__") || starts_with(k, "Stack") ||
      starts_with(k, "Lane User Stack"))
    return "a per-thread (local) array is indexed out of range or the stack overflowed: check its "
           "indices and size";
  if (starts_with(k, "Misaligned") || k.find("Misaligned") != std::string::npos)
    return "a vector access (float4, int2, ...) needs an address aligned to its size: use it only "
           "where the offset is a multiple of the vector width and handle the rest with scalar "
           "accesses";
  if (f.tool == "racecheck" || k.find("Race") != std::string::npos ||
      k.find("Potential") != std::string::npos)
    return "threads of a block access the same shared memory without a barrier between them: put "
           "__syncthreads() between the writes and the reads of the same shared data, and before "
           "shared data is overwritten while other threads may still read it";
  if (starts_with(k, "Uninitialized"))
    return "the kernel reads global memory that was never written: read only the inputs and the "
           "parts of outputs or scratch it wrote itself";
  if (starts_with(k, "Barrier error"))
    return "a __syncthreads() (or another barrier) is reached by only part of the block: do not "
           "put barriers inside branches that differ between the threads of a block";
  return "fix the access compute-sanitizer names";
}

std::string last_line(const std::string& text) {
  std::vector<std::string> lines;
  for (const std::string& l : split_lines(text))
    if (!trim(l).empty()) lines.push_back(trim(l));
  return lines.empty() ? "" : truncate_middle(lines.back(), 200, 80);
}

}  // namespace

SanitizerOutcome judge_sanitizer_run(const ProcessResult& result, const SanitizerReport& report,
                                     const std::string& tool, double timeout_s) {
  SanitizerOutcome o;
  const std::string what = "compute-sanitizer --tool " + tool;
  if (!result.started) {
    o.flag = "sanitizer_incomplete";
    o.detail =
        what + " could not be started: " + result.describe() + "; the kernel was not checked";
    o.log_line = tool + ": not run (" + result.describe() + ")";
    return o;
  }
  bool error_exit =
      !result.timed_out && result.term_signal == 0 && result.exit_code == kSanitizerErrorExitCode;
  long errors = report.errors;
  int error_findings = 0;
  for (const auto& f : report.findings) error_findings += f.error ? f.repeats : 0;
  if (errors > 0 || error_exit) {
    o.flag = "sanitizer_" + tool;
    o.suspect = true;
    long n = errors > 0 ? errors : error_findings;
    std::vector<std::string> shown;
    for (const auto& f : report.findings)
      if (f.error) shown.push_back(f.describe());
    o.detail = tool + " found " +
               (n > 0 ? strprintf("%ld error%s", n, n == 1 ? "" : "s") : std::string("errors")) +
               " while the kernel ran its correctness shapes";
    if (!shown.empty()) {
      o.detail += ": " + join(shown, "; ");
      const SanitizerFinding* first = nullptr;
      for (const auto& f : report.findings)
        if (f.error && first == nullptr) first = &f;
      o.detail += ". Fix: " + advice_for(*first);
    } else {
      o.detail += " (its report could not be read: " + last_line(result.output) + ")";
    }
    o.log_line = tool + ": " + o.detail;
    return o;
  }
  if (result.timed_out || !result.limit_exceeded.empty() || result.term_signal != 0 ||
      result.exit_code != 0 || errors < 0) {
    o.flag = "sanitizer_incomplete";
    std::string why =
        result.timed_out
            ? strprintf("did not finish within %.0f s (eval_config.sanitizer_timeout)", timeout_s)
        : result.success() && errors < 0 ? std::string("printed no error summary")
                                         : "ended with " + result.describe();
    o.detail = what + " " + why + " with no error reported; the kernel was not fully checked";
    std::string tail = last_line(result.output);
    if (!result.timed_out && !tail.empty()) o.detail += " (last output: " + tail + ")";
    o.log_line = tool + ": incomplete: " + why;
    return o;
  }
  if (report.warnings > 0) {
    o.flag = "sanitizer_" + tool + "_warnings";
    std::vector<std::string> shown;
    for (const auto& f : report.findings) shown.push_back(f.describe());
    o.detail = strprintf("%s reported %ld warning%s and no error", tool.c_str(), report.warnings,
                         report.warnings == 1 ? "" : "s") +
               (shown.empty() ? "" : ": " + join(shown, "; ")) +
               (report.findings.empty() ? "" : ". Consider: " + advice_for(report.findings[0]));
    o.log_line = tool + ": " + o.detail;
    return o;
  }
  o.log_line = tool + ": no errors";
  return o;
}

}  // namespace kf
