// kf::main: parses the protocol's command line, opens the device, runs the phases and writes the
// result. Everything is caught here: a candidate's failure is reported, never an abort.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <nlohmann/json.hpp>

#include "harness/case_state.h"
#include "harness/crash.h"
#include "harness/judge_cache.h"
#include "harness/metered_device.h"
#include "harness/options.h"
#include "harness/report.h"
#include "harness/runner.h"

#ifndef KF_HARNESS_VERSION
#define KF_HARNESS_VERSION "0.1.0"
#endif

extern char** environ;

namespace kernelfoundry {

const char* backend_name(Backend backend) {
  switch (backend) {
    case Backend::Host:
      return "host";
    case Backend::OpenCL:
      return "opencl";
    case Backend::CUDA:
      return "cuda";
  }
  return "?";
}

const char* harness_version() {
  return KF_HARNESS_VERSION;
}

namespace {

void say(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

bool read_text(const std::string& path, std::string* text) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream s;
  s << in.rdbuf();
  *text = s.str();
  return true;
}

// A JSON object from `text`; `what` names the source in messages.
bool parse_object(const std::string& text, const std::string& what, nlohmann::json* out,
                  std::string* err) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    *err = what + " is not a JSON object";
    return false;
  }
  *out = std::move(j);
  return true;
}

bool load_params(const Options& o, RunContext* ctx, std::string* err) {
  if (!o.params_file.empty()) {
    std::string text;
    if (!read_text(o.params_file, &text)) {
      *err = "--params: cannot read " + o.params_file;
      return false;
    }
    if (!parse_object(text, "--params file " + o.params_file, &ctx->params, err)) return false;
  }
  if (!o.template_params.empty()) {
    std::string text = o.template_params;
    std::size_t first = text.find_first_not_of(" \t\r\n");
    bool inline_json = first != std::string::npos && text[first] == '{';
    if (!inline_json && !read_text(o.template_params, &text)) {
      *err = "--template-params: '" + o.template_params + "' is neither a JSON object nor a file";
      return false;
    }
    if (!parse_object(text, "--template-params", &ctx->template_params, err)) return false;
  }
  return true;
}

// --extra-shapes: [{"dims": {"rows": 9, "cols": 1003}}, ...], dimensions put in the order the
// task's own shapes name them, so ids match what the task would print.
bool parse_hidden_shapes(const std::string& text, const Suite& suite, std::vector<Shape>* out) {
  if (text.empty()) return true;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array()) return false;
  for (const nlohmann::json& entry : j) {
    if (!entry.is_object() || !entry.contains("dims") || !entry["dims"].is_object()) return false;
    const nlohmann::json& dims = entry["dims"];
    std::vector<std::pair<std::string, long>> list;
    for (const auto& [name, value] : dims.items()) {
      if (!value.is_number_integer() || value.get<long>() < 0) return false;
      list.emplace_back(name, value.get<long>());
    }
    if (list.empty()) return false;
    std::vector<std::pair<std::string, long>> ordered;
    if (!suite.correctness.empty()) {
      for (const auto& named : suite.correctness.front().dims())
        for (const auto& d : list)
          if (d.first == named.first) ordered.push_back(d);
    }
    out->emplace_back(ordered.size() == list.size() ? ordered : list);
  }
  return true;
}

void print_list(const Suite& suite) {
  auto shape_json = [](const Shape& s) {
    nlohmann::ordered_json dims = nlohmann::ordered_json::object();
    for (const auto& [name, value] : s.dims()) dims[name] = value;
    return nlohmann::ordered_json{{"id", s.id()}, {"dims", dims}};
  };
  nlohmann::ordered_json j;
  j["format"] = "kernelfoundry-harness-shapes";
  j["version"] = 1;
  j["backend"] = backend_name(suite.backend);
  j["benchmark"] = suite.benchmarks.front().name;
  for (const Shape& s : suite.correctness) j["correctness"].push_back(shape_json(s));
  for (const Shape& s : suite.benchmarks.front().shapes)
    j["benchmark_shapes"].push_back(shape_json(s));
  for (const Shape& s : checked_shapes(suite)) j["checked_shapes"].push_back(s.id());
  say(j.dump());
}

// A result that cannot be written (disk full, read-only path, file size limit) leaves the
// evaluator nothing to judge: say why on stderr and stop at once with kExitCannotWriteResult, so
// the failure is not taken for the implementation's (the exit code is the harness's own).
void save(const Options& o, const Report& r) {
  if (o.out.empty()) return;
  std::string err;
  if (write_report(o.out, r, &err)) return;
  std::fflush(stdout);
  std::fprintf(stderr, "kernelfoundry harness: %s\n", err.c_str());
  std::fflush(stderr);
  std::_Exit(kExitCannotWriteResult);
}

// The reason line of a checker's report that passed.
void set_check_reason(Report& report) {
  if (report.failed()) return;
  std::size_t correctness = 0, timed = 0;
  for (const CaseRecord& c : report.cases) (c.phase == "correctness" ? correctness : timed)++;
  report.reason = "all " + std::to_string(correctness) + " correctness checks passed";
  if (timed > 0) report.reason += ", and " + std::to_string(timed) + " checks of timed calls";
}

// --serve's default cache: a quarter of the machine's memory, at most 4 GiB.
double default_cache_mib() {
  long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  double quarter = pages > 0 && page > 0 ? double(pages) * double(page) / 4 / (1 << 20) : 0;
  return std::min(4096.0, quarter);
}

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t from = 0;
  while (true) {
    std::size_t tab = line.find('\t', from);
    fields.push_back(line.substr(from, tab == std::string::npos ? std::string::npos : tab - from));
    if (tab == std::string::npos) return fields;
    from = tab + 1;
  }
}

// --serve: the judge of a whole job. "warm<TAB>NONCE" fills the cache. Then one request per line,
// "check<TAB>NONCE<TAB>PHASE<TAB>DUMP_DIR<TAB>OUT_FILE": the outputs in DUMP_DIR are checked as
// --check would, the report written to OUT_FILE, then "kf-judge-done NONCE EXIT_CODE" said. The
// nonce comes from the evaluator, so no line a check prints (they may quote the candidate's
// output names) can pass for the end of an answer. "time<TAB>NONCE<TAB>SHAPE_ID<TAB>CALLS" times
// the reference (Runner::time_reference) and says "kf-samples MS ..." before its end line. Ends at
// the end of stdin.
int serve_checks(Problem& problem, const Suite& suite, const Options& options, RunContext& ctx,
                 const std::vector<Shape>& hidden, const Report& base) {
  double budget_mib = options.cache_mib >= 0 ? options.cache_mib : default_cache_mib();
  JudgeCache cache(budget_mib * double(1 << 20));
  std::map<std::string, Runner::TimingCase> timing;  // the "time" requests' cases, by shape
  say("serving checks (keeping up to " + std::to_string(long(budget_mib)) +
      " MiB of the reference's outputs and inputs)");
  std::string line;
  while (std::getline(std::cin, line)) {
    std::vector<std::string> f = split_tabs(line);
    if (f.size() == 2 && f[0] == "warm") {
      Report report = base;
      Runner runner(problem, suite, options, ctx, report);
      runner.set_judge_cache(&cache);
      try {
        runner.warm_judge();
      } catch (const std::exception& e) {
        report.fail(Status::Error, std::string("harness error: ") + e.what(), "judge");
      }
      if (report.failed()) say("kernelfoundry harness: " + report.reason);
      say("kf-judge-done " + f[1] + " " + std::to_string(exit_code(report.status)));
      continue;
    }
    if (f.size() == 4 && f[0] == "time") {
      // "time<TAB>NONCE<TAB>SHAPE_ID<TAB>CALLS": a batch of the reference's timed calls next to
      // a batch of the candidate's (the paced benchmark), answered with "kf-samples MS ...".
      Report report = base;
      Runner runner(problem, suite, options, ctx, report);
      char* end = nullptr;
      long calls = std::strtol(f[3].c_str(), &end, 10);
      std::vector<double> samples;
      if (end == f[3].c_str() || *end != '\0' || calls < 1 || calls > 100000) {
        report.fail(Status::Error, "time: CALLS '" + f[3] + "' is not in [1, 100000]", "usage");
      } else {
        try {
          runner.time_reference(&timing, f[2], calls, &samples);
        } catch (const std::exception& e) {
          report.fail(Status::Error, std::string("harness error: ") + e.what(), "judge");
        }
      }
      if (report.failed()) {
        say("kernelfoundry harness: " + report.reason);
      } else {
        std::ostringstream line;
        line.precision(9);
        line << "kf-samples";
        for (double ms : samples) line << ' ' << ms;
        say(line.str());
      }
      say("kf-judge-done " + f[1] + " " + std::to_string(exit_code(report.status)));
      continue;
    }
    if (f.size() != 5 || f[0] != "check") {
      say("kernelfoundry harness: --serve: ignored a request that is not "
          "'check<TAB>NONCE<TAB>PHASE<TAB>DUMP_DIR<TAB>OUT_FILE' or "
          "'time<TAB>NONCE<TAB>SHAPE_ID<TAB>CALLS'");
      continue;
    }
    Report report = base;
    report.impl = "checker";
    Options o = options;
    o.serve = false;
    o.phase = f[2] == "correctness" ? Phase::Correctness
              : f[2] == "benchmark" ? Phase::Benchmark
                                    : Phase::All;
    o.check_dir = f[3];
    o.out = f[4];
    Runner runner(problem, suite, o, ctx, report);
    runner.set_hidden_shapes(hidden);
    runner.set_judge_cache(&cache);
    try {
      runner.check();
    } catch (const std::exception& e) {
      report.fail(Status::Error, std::string("harness error: ") + e.what(), "judge");
    }
    set_check_reason(report);
    report.finished = true;
    save(o, report);
    say("kf-judge-done " + f[1] + " " + std::to_string(exit_code(report.status)));
  }
  return 0;
}

// The reason line of a run that passed.
void set_run_reason(const Options& options, Report& report) {
  if (report.failed()) return;
  std::size_t checks = 0;
  for (const CaseRecord& c : report.cases) checks += c.phase == "correctness";
  report.reason = options.phase == Phase::Benchmark ? ""
                  : options.dump_dir.empty()
                      ? "all " + std::to_string(checks) + " correctness checks passed"
                      : "outputs written for the checker";
  if (options.phase != Phase::Correctness) {
    report.reason += (report.reason.empty() ? "" : "; ") + std::string("benchmark '") +
                     report.benchmark + "' timed on " + std::to_string(report.timings.size()) +
                     " shape(s)";
  }
}

// A run's phases as the options ask: correctness (its result saved at once, so a crash in the
// benchmark still leaves it), then the benchmark if nothing failed (paced when `pacer` is given),
// then the reason line.
void run_phases(Runner& runner, const Options& options, Report& report, Pacer* pacer) {
  if (options.phase != Phase::Benchmark) {
    runner.correctness();
    save(options, report);
  }
  if (options.phase != Phase::Correctness && !report.failed()) {
    if (pacer != nullptr) runner.set_pacer(pacer);
    runner.benchmark();
    if (pacer != nullptr && !report.failed()) pacer->done();
  }
  set_run_reason(options, report);
}

// One entry of --sweep's file.
struct SweepItem {
  nlohmann::json template_params;
  std::string out, dump_dir;
};

bool parse_sweep(const std::string& path, std::vector<SweepItem>* items, std::string* err) {
  std::string text;
  if (!read_text(path, &text)) {
    *err = "--sweep: cannot read " + path;
    return false;
  }
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!j.is_array() || j.empty() || j.size() > 4096) {
    *err = "--sweep file " + path + " is not a list of 1 to 4096 combinations";
    return false;
  }
  for (const nlohmann::json& e : j) {
    if (!e.is_object() || !e.contains("template_params") || !e["template_params"].is_object() ||
        !e.contains("out") || !e["out"].is_string() || !e.contains("dump_dir") ||
        !e["dump_dir"].is_string() || e["out"].get<std::string>().empty() ||
        e["dump_dir"].get<std::string>().empty()) {
      *err = "--sweep file " + path +
             ": each entry is {\"template_params\": {...}, \"out\": FILE, \"dump_dir\": DIR}";
      return false;
    }
    items->push_back({e["template_params"], e["out"], e["dump_dir"]});
  }
  return true;
}

// --sweep: the combinations in turn, each as a run with --template-params, --out and --dump-dir
// would do it, in this one process (one device open; the benchmark shapes' inputs set up once and
// found intact after every run). A combination that fails with an error (an exception, a device
// fault, a thread left running) may leave the process or device unusable: the sweep stops there
// and the evaluator runs the rest in a new child. The sweep's own result says how far it got.
int run_sweep(Problem& problem, const Suite& suite, const Options& options, RunContext& ctx,
              const std::vector<Shape>& hidden, Report& report) {
  std::vector<SweepItem> items;
  std::string err;
  if (!parse_sweep(options.sweep, &items, &err)) {
    report.fail(Status::Error, "bad arguments: " + err, "usage");
    say("kernelfoundry harness: " + err);
    return 2;
  }
  Runner::CaseCache cases;
  std::size_t done = 0;
  for (const SweepItem& item : items) {
    Options o = options;
    o.sweep.clear();
    o.out = item.out;
    o.dump_dir = item.dump_dir;
    o.template_params = item.template_params.dump();
    Report r = report;
    r.template_params_json = o.template_params;
    ctx.template_params = item.template_params;
    set_template_params(item.template_params);
    save(o, r);  // says "stopped before it finished" until overwritten
    say("sweep " + std::to_string(done + 1) + "/" + std::to_string(items.size()) + ": " +
        o.template_params);
    Runner runner(problem, suite, o, ctx, r);
    runner.set_hidden_shapes(hidden);
    runner.set_case_cache(&cases);
    try {
      run_phases(runner, o, r, nullptr);
    } catch (const std::exception& e) {
      r.fail(Status::Error, std::string("harness error: ") + e.what(), "internal");
    }
    r.finished = true;
    save(o, r);
    say(std::string("sweep result: ") + status_name(r.status) +
        (r.reason.empty() ? "" : " - " + r.reason));
    ++done;
    if (r.status == Status::Error) break;
  }
  report.reason = "sweep: " + std::to_string(done) + " of " + std::to_string(items.size()) +
                  " combination(s) run" +
                  (done < items.size() ? " (stopped after an error; the rest not run)" : "");
  return 0;
}

int run_protocol(const std::vector<std::string>& args, Problem& problem, const Suite& suite,
                 Report& report, Options& options) {
  std::string err;
  if (!parse_options(args, &options, &err)) {
    // Still honour --out when it parsed, so the evaluator gets a reason.
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--out") options.out = args[i + 1];
    }
    report.fail(Status::Error, "bad arguments: " + err, "usage");
    say("kernelfoundry harness: " + err);
    return 2;
  }
  if (options.help) {
    say(usage_text(report.argv.empty() ? "task_bin" : report.argv.front()));
    return 0;
  }
  if (!validate_suite(suite, &err)) {
    report.fail(Status::Error, "task definition: " + err, "task");
    say("kernelfoundry harness: task definition: " + err);
    return 2;
  }
  if (options.list) {
    print_list(suite);
    return 0;
  }
  report.benchmark = suite.benchmarks.front().name;
  report.impl = options.ref ? "reference" : "candidate";
  report.backend = backend_name(suite.backend);
  report.cold = !options.warm;

  RunContext ctx;
  ctx.kernel_dir = options.kernel_dir;
  if (!load_params(options, &ctx, &err)) {
    report.fail(Status::Error, "bad arguments: " + err, "usage");
    say("kernelfoundry harness: " + err);
    return 2;
  }
  std::vector<Shape> hidden;
  if (!parse_hidden_shapes(options.extra_shapes, suite, &hidden)) {
    report.fail(Status::Error,
                "bad arguments: --extra-shapes is not a list of {\"dims\": {name: size}}", "usage");
    say("kernelfoundry harness: " + report.reason);
    return 2;
  }
  report.params_json = ctx.params.dump();
  report.template_params_json = ctx.template_params.dump();
  set_template_params(ctx.template_params);
  save(options, report);  // says "stopped before it finished" until overwritten

  std::unique_ptr<Device> device;
  // The device object's release (its own buffers and events; a CUDA context and CUPTI stay until
  // the process exits), timed as device.close in phase_seconds: declared right after the device, so
  // on every return it is destroyed last but for the device, and releases it itself.
  struct CloseTimer {
    Report& report;
    std::unique_ptr<Device>& device;
    ~CloseTimer() {
      auto start = std::chrono::steady_clock::now();
      device.reset();
      report.phase_seconds.emplace_back(
          "device.close",
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  } closing{report, device};
  auto open_start = std::chrono::steady_clock::now();
  try {
    DeviceOptions device_options;
    device_options.kernel_dir = options.kernel_dir;
    device_options.under_profiler = options.profile_one_call;
    device = make_device(suite.backend, device_options);
  } catch (const std::exception& e) {
    report.fail(
        Status::Error,
        std::string("cannot open the ") + backend_name(suite.backend) + " device: " + e.what(),
        "device_unavailable");  // before any implementation ran: the machine's fault
    say("kernelfoundry harness: " + report.reason);
    return 2;
  }
  double open_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - open_start).count();
  DeviceTimes device_times;
  std::unique_ptr<Device> metered = make_metered_device(device.get(), &device_times);
  ctx.device = metered.get();
  // Where the process's seconds went, beside the protocol's phases (bench/eval_overhead.py).
  struct AddDeviceTimes {
    Report& report;
    const DeviceTimes& times;
    double open_s;
    ~AddDeviceTimes() {
      report.phase_seconds.emplace_back("device.open", open_s);
      for (const auto& phase : times.phases()) report.phase_seconds.push_back(phase);
    }
  } add_device_times{report, device_times, open_s};
  report.device = device->name();
  report.device_info = device->info();
  std::string header = std::string("kernelfoundry harness ") + harness_version() + ": " +
                       report.impl + " on " + report.backend + " device '" + report.device + "'";
  std::string timer;
  for (const auto& [key, value] : report.device_info) {
    if (key == "platform") header += " (platform '" + value + "')";
    if (key == "timer" && value.rfind("events", 0) == 0) timer = value;
  }
  say(header);
  // CUDA without CUPTI: said once, not an error (event timing, see docs/harness.md).
  if (!timer.empty()) say("timing: " + timer);

  Runner runner(problem, suite, options, ctx, report);
  runner.set_hidden_shapes(hidden);
  if (options.serve) return serve_checks(problem, suite, options, ctx, hidden, report);
  if (!options.check_dir.empty()) {
    report.impl = "checker";
    runner.check();
    set_check_reason(report);
    return exit_code(report.status);
  }
  if (!options.sweep.empty()) return run_sweep(problem, suite, options, ctx, hidden, report);
  std::unique_ptr<Pacer> pacer;
  if (!options.pace_in.empty() && options.phase != Phase::Correctness)
    pacer = std::make_unique<Pacer>(options.pace_in, options.pace_out);
  run_phases(runner, options, report, pacer.get());
  return exit_code(report.status);
}

}  // namespace

int main(int argc, char** argv, Problem& problem, const Suite& suite) {
  auto main_start = std::chrono::steady_clock::now();
  install_crash_handlers();
  // Past a file size limit (ulimit -f) a write then fails with EFBIG, which save() reports,
  // instead of SIGXFSZ killing the process with no word on why.
  std::signal(SIGXFSZ, SIG_IGN);
  Report report;
  Options options;
  for (int i = 0; i < argc; ++i) report.argv.emplace_back(argv[i]);
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, "KF_HARNESS_", 11) == 0) report.env_switches.emplace_back(*e);
  std::vector<std::string> args(report.argv.begin() + (argc > 0 ? 1 : 0), report.argv.end());
  int code;
  try {
    code = run_protocol(args, problem, suite, report, options);
  } catch (const std::exception& e) {
    report.fail(Status::Error, std::string("harness error: ") + e.what(), "internal");
    code = 2;
  } catch (...) {
    report.fail(Status::Error, "harness error: unknown exception", "internal");
    code = 2;
  }
  if (options.help || options.list || options.serve) return code;
  report.finished = true;
  // From main's start to the result's last write: the rest of the parent's view of this child is
  // the process's start before main and its end after it.
  report.phase_seconds.emplace_back(
      "process.main",
      std::chrono::duration<double>(std::chrono::steady_clock::now() - main_start).count());
  save(options, report);
  for (const Flag& f : report.flags) {
    say("flag " + f.flag + (f.count > 1 ? " (x" + std::to_string(f.count) + ")" : "") + ": " +
        f.detail);
  }
  say(std::string("result: ") + status_name(report.status) +
      (report.reason.empty() ? "" : " - " + report.reason));
  int status = code == 0 ? exit_code(report.status) : code;
  if (!options.dump_dir.empty() || !options.sweep.empty()) {
    // The candidate's process ends here, with no atexit handler, static destructor or .fini_array
    // entry of the candidate's run after the result is written: nothing may rewrite it.
    std::fflush(nullptr);
    std::_Exit(status);
  }
  return status;
}

int main(int argc, char** argv, Problem& problem, Backend backend, std::vector<Shape> correctness,
         Benchmark benchmark) {
  Suite suite;
  suite.backend = backend;
  suite.correctness = std::move(correctness);
  suite.benchmarks.push_back(std::move(benchmark));
  return main(argc, argv, problem, suite);
}

}  // namespace kernelfoundry
