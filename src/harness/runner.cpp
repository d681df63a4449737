// The protocol's phases. Integrity (DESIGN.md §6.2): outputs poisoned before every call, inputs
// checksummed, guard bytes checked, every benchmark shape and several seeds checked, two calls per
// case, reference outputs kept apart, outputs re-checked after the timing loop.
#include "harness/runner.h"

#include <dirent.h>
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "harness/checks.h"
#include "harness/crash.h"
#include "harness/fill.h"
#include "harness/judge_cache.h"
#include "harness/pace.h"
#include "harness/perf_window.h"
#include "harness/perturb.h"

namespace kernelfoundry {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Adds the scope's duration to `total`.
class StepTimer {
 public:
  explicit StepTimer(double* total) : total_(total), start_(Clock::now()) {}
  ~StepTimer() { *total_ += seconds_since(start_); }
  StepTimer(const StepTimer&) = delete;
  StepTimer& operator=(const StepTimer&) = delete;

 private:
  double* total_;
  Clock::time_point start_;
};

// Inputs up to this size are checksummed after every call; larger ones after the last call of a
// case (a modification persists, so it is still caught, at half the downloads).
constexpr double kEagerInputCheckBytes = 16.0 * (1 << 20);
// The benchmark without a judge, asked to move the buffers (KF_HARNESS_MOVE_BUFFERS=1), moves them
// after this many timed calls.
constexpr long kStandaloneMoveEvery = 8;

void say(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);  // the log must survive a crash in the next call
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

CaseRecord make_record(const std::string& phase, const CaseState& cs, int call,
                       const std::string& output, Status status, const std::string& message) {
  CaseRecord rec;
  rec.phase = phase;
  rec.shape = cs.shape.id();
  rec.seed = cs.seed;
  rec.call = call;
  rec.output = output;
  rec.status = status;
  rec.message = message;
  return rec;
}

// This process's threads now, by id (/proc/self/task); empty where that cannot be read.
std::set<long> thread_ids() {
  std::set<long> ids;
  DIR* dir = ::opendir("/proc/self/task");
  if (dir == nullptr) return ids;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] != '.') ids.insert(std::strtol(e->d_name, nullptr, 10));
  }
  ::closedir(dir);
  return ids;
}

// Whether thread `tid` is working: it never rests (not running, no CPU time used) over 3 ms in
// the next ~30 ms. A thread that has ended counts as idle.
bool thread_working(long tid) {
  auto read = [tid](char* state, unsigned long long* ticks) {
    std::string path = "/proc/self/task/" + std::to_string(tid) + "/stat";
    std::FILE* f = std::fopen(path.c_str(), "r");
    if (f == nullptr) return false;
    char buf[1024];
    std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
    std::fclose(f);
    buf[n] = '\0';
    const char* rest = std::strrchr(buf, ')');  // the name may hold spaces and parentheses
    unsigned long long utime = 0, stime = 0;
    if (rest == nullptr ||
        std::sscanf(rest + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", state,
                    &utime, &stime) != 3)
      return false;
    *ticks = utime + stime;
    return true;
  };
  // A thread just started may still be on its way to its first wait: give it ~30 ms to settle.
  auto busy = [](char c) { return c == 'R' || c == 'D'; };
  for (int attempt = 0; attempt < 10; ++attempt) {
    char state = 0, later = 0;
    unsigned long long ticks = 0, later_ticks = 0;
    if (!read(&state, &ticks)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
    if (!read(&later, &later_ticks)) return false;
    if (!busy(state) && !busy(later) && later_ticks == ticks) return false;
  }
  return true;
}

const char* impl_name(Impl impl) {
  return impl == Impl::Reference ? "reference" : "candidate";
}

}  // namespace

struct Runner::CallOutcome {
  bool ok = true;
  Status status = Status::Pass;
  std::string kind;
  std::string message;
  std::string log;
  double device_ms = -1;
  double host_ms = 0;

  void fail(Status s, std::string k, std::string m) {
    ok = false;
    status = s;
    kind = std::move(k);
    message = std::move(m);
  }
};

// The worst comparison seen for one output across the seeds and calls of a shape.
struct Runner::OutputStats {
  std::string name;  // empty for scratch buffers
  double max_abs = 0, max_rel = 0, min_cosine = 1;
};

// ---- suite --------------------------------------------------------------------------------

bool validate_suite(const Suite& suite, std::string* err) {
  if (suite.benchmarks.size() != 1) {
    *err = "a task declares exactly one benchmark; this one declares " +
           std::to_string(suite.benchmarks.size());
    return false;
  }
  const Benchmark& bench = suite.benchmarks.front();
  if (bench.name.empty()) {
    *err = "the benchmark needs a name";
    return false;
  }
  if (bench.shapes.empty()) {
    *err = "benchmark '" + bench.name + "' has no shapes";
    return false;
  }
  auto check_list = [&](const std::vector<Shape>& shapes, const std::string& what) {
    std::set<std::string> ids;
    for (const Shape& shape : shapes) {
      if (shape.dims().empty()) {
        *err = what + " has a shape with no dimensions";
        return false;
      }
      std::set<std::string> names;
      for (const auto& [name, value] : shape.dims()) {
        if (name.empty() || name.find_first_of("=,") != std::string::npos) {
          *err = what + " shape '" + shape.id() +
                 "': dimension names must be non-empty, without '=' or ','";
          return false;
        }
        if (!names.insert(name).second) {
          *err = what + " shape '" + shape.id() + "' names dimension '" + name + "' twice";
          return false;
        }
      }
      if (!ids.insert(shape.id()).second) {
        *err = what + " lists shape '" + shape.id() + "' twice";
        return false;
      }
    }
    return true;
  };
  return check_list(suite.correctness, "the correctness list") &&
         check_list(bench.shapes, "benchmark '" + bench.name + "'");
}

std::vector<Shape> checked_shapes(const Suite& suite) {
  std::vector<Shape> shapes = suite.correctness;
  std::set<std::string> ids;
  for (const Shape& s : shapes) ids.insert(s.id());
  for (const Benchmark& b : suite.benchmarks) {
    for (const Shape& s : b.shapes) {
      if (ids.insert(s.id()).second) shapes.push_back(s);
    }
  }
  return shapes;
}

// ---- one call -----------------------------------------------------------------------------

Runner::Runner(Problem& problem, const Suite& suite, const Options& options, RunContext& context,
               Report& report)
    : problem_(problem), suite_(suite), options_(options), ctx_(context), report_(report) {
  if (dumping()) dump_ = std::make_unique<DumpWriter>(options_.dump_dir);
  if (writing_expected()) dump_ = std::make_unique<DumpWriter>(options_.expected_out);
}

bool Runner::run_setup(CaseState& cs) {
  Case c(&cs);
  std::string where = "setup() on shape " + cs.shape.id() + " seed " + std::to_string(cs.seed);
  set_crash_context("running " + where);
  std::string problem;
  try {
    problem_.setup(c);
  } catch (const std::exception& e) {
    problem = e.what();
  } catch (...) {
    problem = "unknown exception";
  }
  cs.in_setup = false;
  bool has_output = std::any_of(cs.outputs.begin(), cs.outputs.end(), [](const OutputSpec& o) {
    return o.role != Buffer::Role::Scratch;
  });
  if (problem.empty() && !has_output) problem = "declared no output to compare";
  if (problem.empty()) return true;
  CaseRecord rec = make_record("setup", cs, 0, "", Status::Error, where + ": " + problem);
  report_.cases.push_back(rec);
  report_.fail(Status::Error, where + " failed: " + problem, "setup");
  say("  FAIL " + where + ": " + problem);
  return false;
}

void Runner::prepare_set(CaseState& cs, int set, int variant) {
  Device& device = *ctx_.device;
  for (std::size_t k = 0; k < cs.outputs.size(); ++k) {
    const OutputSpec& spec = cs.outputs[k];
    Buffer& b = *cs.sets[set][k];
    BufferAccess::reset_count(b);
    if (spec.role == Buffer::Role::Output) {
      std::vector<unsigned char> poison = poison_pattern(spec.dtype, variant);
      device.fill(b.handle(), 0, poison.data(), poison.size(), BufferAccess::capacity_bytes(b));
    } else if (spec.role == Buffer::Role::InOut) {
      device.upload(b.handle(), 0, spec.initial.data(), spec.initial.size());
    }
  }
}

Runner::CallOutcome Runner::invoke(CaseState& cs, Impl impl, int set, int call) {
  CallOutcome out;
  Case c(&cs);
  cs.active = set;
  cs.impl = impl;
  set_crash_context(std::string("running the ") + impl_name(impl) + " on shape " + cs.shape.id() +
                    " seed " + std::to_string(cs.seed) + " (call " + std::to_string(call) + ")");
  Device& device = *ctx_.device;
  auto start = Clock::now();
  try {
    device.begin_call();
    problem_.run(c, impl);
    out.device_ms = device.end_call();
  } catch (const CompileError& e) {
    out.fail(Status::Error, "compile", e.what());
    out.log = e.log();
  } catch (const DeviceError& e) {
    out.fail(Status::Error, "device", e.what());
  } catch (const std::exception& e) {
    out.fail(Status::Error, "exception", std::string("exception in run(): ") + e.what());
  } catch (...) {
    out.fail(Status::Error, "exception", "unknown exception thrown by run()");
  }
  if (!out.ok && out.kind != "device") {
    // The call may have left work enqueued: drain it so the next step sees a quiet device.
    try {
      device.end_call();
    } catch (const std::exception& e) {
      out.message += "; then the device reported: " + std::string(e.what());
    }
  }
  out.host_ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  cs.active = -1;
  set_crash_context("checking results of shape " + cs.shape.id());
  return out;
}

bool Runner::check_integrity(CaseState& cs, int set, CallOutcome* outcome, bool inputs) {
  std::vector<Buffer*> buffers;
  for (auto& b : cs.inputs) buffers.push_back(b.get());
  for (auto& b : cs.sets[set]) buffers.push_back(b.get());
  for (Buffer* b : buffers) {
    std::string detail;
    if (!guard_intact(*b, &detail)) {
      restore_guard(*b);
      std::string msg = "out-of-bounds write past the end of " +
                        std::string(b->role() == Buffer::Role::Input ? "input" : "buffer") + " '" +
                        b->name() + "': " + detail;
      report_.add_flag("out_of_bounds_write", cs.shape.id() + ": " + msg);
      outcome->fail(Status::Error, "out_of_bounds", msg);
      return false;
    }
  }
  for (std::size_t k = 0; inputs && k < cs.inputs.size(); ++k) {
    if (buffer_checksum(*cs.inputs[k], &staging_) != cs.input_sums[k]) {
      std::string msg = "modified input '" + cs.inputs[k]->name() + "'";
      report_.add_flag("input_modified", cs.shape.id() + ": " + msg);
      outcome->fail(Status::Wrong, "", msg);
      return false;
    }
  }
  return true;
}

Runner::CallOutcome Runner::call(CaseState& cs, Impl impl, int set, int call, int variant) {
  prepare_set(cs, set, variant);
  CallOutcome out = invoke(cs, impl, set, call);
  if (out.ok) check_integrity(cs, set, &out);
  return out;
}

void Runner::record_failure(const CaseState& cs, const std::string& phase, int call,
                            const std::string& where, const CallOutcome& outcome) {
  CaseRecord rec = make_record(phase, cs, call, "", outcome.status, outcome.message);
  report_.cases.push_back(rec);
  report_.fail(outcome.status, where + ": " + outcome.message, outcome.kind);
  if (!outcome.log.empty() && report_.error_log.empty()) report_.error_log = outcome.log;
  say("  FAIL " + where + ": " + outcome.message);
  if (!outcome.log.empty()) say(outcome.log);
}

bool Runner::compute_expected(CaseState& cs) {
  CallOutcome out = call(cs, Impl::Reference, kExpectedSet, 0, 0);
  if (!out.ok) {
    out.message = "reference: " + out.message;
    record_failure(
        cs, "reference", 0,
        "reference failed on shape " + cs.shape.id() + " seed " + std::to_string(cs.seed), out);
    return false;
  }
  expected_.resize(cs.sets[kExpectedSet].size());
  expected_counts_.clear();
  for (std::size_t k = 0; k < cs.sets[kExpectedSet].size(); ++k) {
    const Buffer& b = *cs.sets[kExpectedSet][k];
    if (b.role() == Buffer::Role::Scratch) {
      expected_[k].clear();
    } else {
      to_host(b, &expected_[k]);
    }
    expected_counts_.push_back(b.count());
  }
  return true;
}

// ---- comparisons --------------------------------------------------------------------------

bool Runner::compare_outputs(CaseState& cs, const std::string& phase, int call, int variant,
                             const std::string& where, std::vector<OutputStats>* stats, int slot) {
  std::vector<std::vector<unsigned char>>& host_copies = actual_[slot];
  host_copies.resize(cs.outputs.size());
  for (std::size_t k = 0; k < cs.outputs.size(); ++k) {
    const OutputSpec& spec = cs.outputs[k];
    if (spec.role == Buffer::Role::Scratch) {
      host_copies[k].clear();
      continue;
    }
    Buffer& got = *cs.sets[kTestSet][k];
    CaseRecord rec = make_record(phase, cs, call, spec.name, Status::Pass, "");
    if (got.count() != expected_counts_[k]) {
      rec.status = Status::ShapeMismatch;
      rec.message = "output '" + spec.name + "' has " + std::to_string(got.count()) +
                    " elements, the reference produced " + std::to_string(expected_counts_[k]);
      report_.cases.push_back(rec);
      report_.fail(Status::ShapeMismatch, where + ": " + rec.message);
      say("  FAIL " + where + ": " + rec.message);
      return false;
    }
    std::vector<unsigned char>& actual = host_copies[k];
    to_host(got, &actual);
    rec.compared = true;
    rec.tol = spec.tol;
    rec.cmp = compare(actual.data(), expected_[k].data(), spec.dtype, got.count(), spec.tol);
    if (stats) {
      OutputStats& s = (*stats)[k];
      s.max_abs = std::max(s.max_abs, rec.cmp.max_abs);
      s.max_rel = std::max(s.max_rel, rec.cmp.max_rel);
      s.min_cosine = std::min(s.min_cosine, rec.cmp.cosine);
    }
    if (!rec.cmp.passed) {
      rec.status = Status::Wrong;
      long n = got.count();
      long untouched = 0;
      std::string what;
      if (spec.role == Buffer::Role::Output) {
        std::vector<unsigned char> poison = poison_pattern(spec.dtype, variant);
        untouched = count_pattern(actual.data(), spec.dtype, n, poison.data());
        what = "poison pattern";
      } else {
        for (long i = 0; i < n; ++i) {
          std::size_t size = dtype_size(spec.dtype), off = std::size_t(i) * size;
          untouched += std::memcmp(&actual[off], &spec.initial[off], size) == 0;
        }
        what = "initial values";
      }
      if (n > 0 && untouched == n) {
        rec.message = "output '" + spec.name + "' was never written (still holds the " + what + ")";
      } else {
        rec.message = "output '" + spec.name + "': " + rec.cmp.describe(spec.tol);
        if (untouched > 0 && spec.role == Buffer::Role::Output) {
          rec.message += "; " + std::to_string(untouched) + " of " + std::to_string(n) +
                         " elements still hold the poison pattern (never written)";
        }
      }
      report_.cases.push_back(rec);
      report_.fail(Status::Wrong, where + ": " + rec.message);
      say("  FAIL " + where + ": " + rec.message);
      return false;
    }
    report_.cases.push_back(rec);
  }
  return true;
}

void Runner::note_nondeterminism(const CaseState& cs,
                                 const std::vector<std::vector<unsigned char>>& first,
                                 const std::vector<std::vector<unsigned char>>& second) {
  for (std::size_t k = 0; k < cs.outputs.size() && k < first.size() && k < second.size(); ++k) {
    const OutputSpec& spec = cs.outputs[k];
    if (first[k].size() != second[k].size() || first[k] == second[k]) continue;
    std::size_t size = dtype_size(spec.dtype);
    long differ = 0, n = long(first[k].size() / size);
    for (long i = 0; i < n; ++i) {
      differ += std::memcmp(&first[k][std::size_t(i) * size], &second[k][std::size_t(i) * size],
                            size) != 0;
    }
    if (differ > 0) {
      report_.add_flag("nondeterministic",
                       "shape " + cs.shape.id() + " seed " + std::to_string(cs.seed) + " output '" +
                           spec.name + "': " + std::to_string(differ) + " of " + std::to_string(n) +
                           " elements differ bitwise between two passing calls");
    }
  }
}

// ---- correctness --------------------------------------------------------------------------

bool Runner::check_case(const Shape& shape, int seed, std::vector<OutputStats>* stats,
                        double* bytes) {
  CaseState cs(ctx_, shape, seed);
  {
    StepTimer timer(&times_.setup);
    if (!run_setup(cs)) return false;
  }
  {
    StepTimer timer(&times_.reference);
    if (!compute_expected(cs)) return false;
  }
  double input_bytes = 0;
  for (auto& b : cs.inputs) input_bytes += double(BufferAccess::capacity_bytes(*b));
  *bytes = input_bytes;
  for (const auto& set : cs.sets) {
    for (const auto& b : set) *bytes += double(BufferAccess::capacity_bytes(*b));
  }
  stats->resize(cs.outputs.size());
  for (std::size_t k = 0; k < cs.outputs.size(); ++k) {
    if (cs.outputs[k].role != Buffer::Role::Scratch) (*stats)[k].name = cs.outputs[k].name;
  }
  for (int call_no = 1; call_no <= 2; ++call_no) {
    int variant = call_no - 1;  // a different poison per call
    std::string where = "correctness failed on shape " + shape.id() + " seed " +
                        std::to_string(seed) + " call " + std::to_string(call_no);
    // Call 1 passed on these inputs and call 2 differs only in the poison: a failure now points
    // to state the kernel keeps between calls.
    if (call_no == 2) {
      where += " (call 1 on the same inputs was correct: correct only on the first call)";
    }
    CallOutcome out;
    {
      StepTimer timer(&times_.calls);
      prepare_set(cs, kTestSet, variant);
      out = invoke(cs, test_impl(), kTestSet, call_no);
    }
    StepTimer timer(&times_.checks);
    if (out.ok)
      check_integrity(cs, kTestSet, &out, call_no == 2 || input_bytes <= kEagerInputCheckBytes);
    if (!out.ok) {
      record_failure(cs, "correctness", call_no, where, out);
      return false;
    }
    if (!compare_outputs(cs, "correctness", call_no, variant, where, stats, call_no - 1))
      return false;
    if (call_no == 2) note_nondeterminism(cs, actual_[0], actual_[1]);
  }
  return true;
}

void Runner::correctness() {
  auto start = Clock::now();
  // With the split judge (the candidate's run hands its outputs over, the reference's run writes
  // the expected ones) a benchmark shape is judged after timing, on a picked timed call with
  // perturbed inputs and on a call with fresh inputs, and the judge refuses a run that hands over
  // either of them for any benchmark shape. The judge compares only after the whole run, so a
  // check here would not stop a wrong kernel sooner: it would only set up, download and hand
  // over the largest outputs of the task once more (0.4-0.6 s a candidate on softmax_cuda).
  bool judged_after_timing = dumping() || writing_expected();
  std::vector<Shape> shapes;
  for (const Shape& s : options_.no_benchmark_shapes ? suite_.correctness : checked_shapes(suite_))
    if (!judged_after_timing || !is_benchmark_shape(s)) shapes.push_back(s);
  for (const Shape& h : hidden_) {
    bool listed = judged_after_timing && is_benchmark_shape(h);
    for (const Shape& s : shapes) listed = listed || s.id() == h.id();
    if (!listed) shapes.push_back(h);
  }
  double large_bytes = options_.large_shape_mib * double(1 << 20);
  say("correctness: " + std::to_string(shapes.size()) + " shapes x " +
      std::to_string(options_.seeds) + " seeds x 2 calls" +
      (judged_after_timing ? " (benchmark shapes: judged after timing)" : "") +
      (large_bytes > 0 && options_.seeds > 1
           ? " (shapes over " + fmt("%g", options_.large_shape_mib) + " MiB: seed 1 only)"
           : ""));
  std::size_t cases_before = report_.cases.size();
  times_ = StepTimes{};
  for (const Shape& shape : shapes) {
    std::vector<OutputStats> stats;
    bool ok = true;
    int seeds_checked = 0;
    for (int seed = 1; seed <= options_.seeds && ok; ++seed) {
      double bytes = 0;
      // The reference may refuse a hidden shape (a size outside its contract): then the shape
      // is left out of the job's checks instead of failing the reference.
      Report saved = writing_expected() && is_hidden(shape) ? report_ : Report{};
      try {
        if (dumping()) {
          ok = dump_case(shape, seed, &bytes);
        } else if (writing_expected()) {
          ok = expect_case(shape, seed, &bytes);
        } else {
          ok = check_case(shape, seed, &stats, &bytes);
        }
      } catch (const DeviceError& e) {  // from the harness's own device calls (fill, copy)
        report_.fail(Status::Error, "correctness on shape " + shape.id() + ": " + e.what(),
                     "device");
        say("  FAIL correctness on shape " + shape.id() + ": " + e.what());
        ok = false;
      }
      if (!ok && writing_expected() && is_hidden(shape)) {
        std::string why = report_.reason;
        report_ = saved;
        report_.add_flag("hidden_shape_skipped", shape.id() + ": " + why);
        say("  skip hidden shape " + shape.id() + ": the reference failed on it (" + why + ")");
        ok = true;
        seeds_checked = -1;
        break;
      }
      ++seeds_checked;
      // A large shape costs seconds per seed; its other seeds add little the small shapes and
      // the benchmark phase (a seed of its own) do not already cover.
      if (large_bytes > 0 && bytes > large_bytes) break;
    }
    if (!ok) break;
    if (seeds_checked < 0) continue;
    std::string line = "  ok   " + shape.id() + (is_hidden(shape) ? " (hidden shape)" : "");
    if (dumping()) line += "  (outputs written for the checker)";
    for (const OutputStats& s : stats) {
      if (s.name.empty()) continue;
      line += "  " + s.name + ": max_abs " + fmt("%.3g", s.max_abs) + " max_rel " +
              fmt("%.3g", s.max_rel) + " cosine " + fmt("%.6f", s.min_cosine);
    }
    if (seeds_checked < options_.seeds) line += "  (large: seed 1 only)";
    say(line);
  }
  double seconds = seconds_since(start);
  report_.phase_seconds.emplace_back("correctness", seconds);
  report_.phase_seconds.emplace_back("correctness.setup", times_.setup);
  report_.phase_seconds.emplace_back("correctness.reference", times_.reference);
  report_.phase_seconds.emplace_back("correctness.calls", times_.calls);
  report_.phase_seconds.emplace_back("correctness.checks", times_.checks);
  if (dumping()) report_.phase_seconds.emplace_back("correctness.dump", times_.dump);
  if (!report_.failed() && (dumping() || writing_expected())) {
    say(std::string("correctness: outputs of ") + (dumping() ? "every call" : "the reference") +
        " written for the checker in " + fmt("%.2f s", seconds) + " (setup " +
        fmt("%.2f", times_.setup) + ", reference " + fmt("%.2f", times_.reference) + ", calls " +
        fmt("%.2f", times_.calls) + ", checks " + fmt("%.2f", times_.checks) + ")");
  } else if (!report_.failed()) {
    say("correctness: passed " + std::to_string(report_.cases.size() - cases_before) +
        " checks in " + fmt("%.2f s", seconds) + " (setup " + fmt("%.2f", times_.setup) +
        ", reference " + fmt("%.2f", times_.reference) + ", calls " + fmt("%.2f", times_.calls) +
        ", checks " + fmt("%.2f", times_.checks) + ")");
  }
}

// ---- the split judge: candidate child, reference child ------------------------------------

bool Runner::is_benchmark_shape(const Shape& shape) const {
  for (const Shape& b : suite_.benchmarks.front().shapes)
    if (b.id() == shape.id()) return true;
  return false;
}

bool Runner::is_hidden(const Shape& shape) const {
  for (const Shape& h : hidden_)
    if (h.id() == shape.id()) return true;
  return false;
}

bool Runner::dump_outputs(CaseState& cs, int set, const std::string& kind, int call, int variant,
                          const std::vector<Perturbation>& perturb,
                          std::vector<std::vector<unsigned char>>* keep,
                          std::vector<std::vector<unsigned char>>* host) {
  DumpEntry entry;
  entry.kind = kind;
  entry.shape = cs.shape;
  entry.seed = cs.seed;
  entry.call = call;
  entry.variant = variant;
  entry.perturb = perturb;
  std::vector<std::vector<unsigned char>> data;
  for (std::size_t k = 0; k < cs.outputs.size(); ++k) {
    const OutputSpec& spec = cs.outputs[k];
    if (spec.role == Buffer::Role::Scratch) continue;
    if (host != nullptr) {
      data.push_back(std::move((*host)[k]));
    } else {
      data.emplace_back();
      to_host(*cs.sets[set][k], &data.back());
    }
    long count = long(data.back().size() / dtype_size(spec.dtype));
    entry.outputs.push_back({spec.name, spec.dtype, int(spec.role), count, spec.tol, ""});
  }
  std::string err;
  if (dump_->add(std::move(entry), data, &err)) {
    if (keep != nullptr) *keep = std::move(data);
    return true;
  }
  // Like an unwritable result file: the machine's fault, said on stderr with the harness's own
  // exit code so it is not taken for the implementation's.
  std::fflush(stdout);
  std::fprintf(stderr, "kernelfoundry harness: %s\n", err.c_str());
  std::fflush(stderr);
  std::_Exit(kExitCannotWriteResult);
}

bool Runner::dump_case(const Shape& shape, int seed, double* bytes) {
  CaseState cs(ctx_, shape, seed);
  {
    StepTimer timer(&times_.setup);
    if (!run_setup(cs)) return false;
  }
  double input_bytes = 0;
  for (auto& b : cs.inputs) input_bytes += double(BufferAccess::capacity_bytes(*b));
  *bytes = input_bytes;
  for (const auto& b : cs.sets[kTestSet]) *bytes += double(BufferAccess::capacity_bytes(*b));
  std::string hidden = is_hidden(shape) ? " (a hidden shape near the listed ones: the kernel must "
                                          "handle any size, not only the listed ones)"
                                        : "";
  // Benchmark shapes never come here: the judge checks them after timing (correctness()).
  for (int call_no = 1; call_no <= 2; ++call_no) {
    int variant = call_no - 1;
    std::string where = "correctness failed on shape " + shape.id() + hidden + " seed " +
                        std::to_string(seed) + " call " + std::to_string(call_no);
    CallOutcome out;
    {
      StepTimer timer(&times_.calls);
      prepare_set(cs, kTestSet, variant);
      out = invoke(cs, Impl::Candidate, kTestSet, call_no);
    }
    {
      StepTimer timer(&times_.checks);
      // The inputs' checksums after call 2, and after call 1 too where the inputs are small.
      if (out.ok)
        check_integrity(cs, kTestSet, &out, call_no == 2 || input_bytes <= kEagerInputCheckBytes);
    }
    if (!out.ok) {
      record_failure(cs, "correctness", call_no, where, out);
      return false;
    }
    StepTimer timer(&times_.dump);
    if (call_no == 1) {
      // Call 1 goes to the checker; call 2 on the same inputs must give what call 1 gave (both
      // are this process's own outputs, so comparing them here decides nothing about values).
      std::vector<std::vector<unsigned char>> first;
      if (!dump_outputs(cs, kTestSet, "case", call_no, variant, {}, &first)) return false;
      expected_.assign(cs.outputs.size(), {});
      expected_counts_.assign(cs.outputs.size(), 0);
      std::size_t next = 0;
      for (std::size_t k = 0; k < cs.outputs.size(); ++k) {
        if (cs.outputs[k].role == Buffer::Role::Scratch) continue;
        expected_counts_[k] = cs.sets[kTestSet][k]->count();
        expected_[k] = std::move(first[next++]);
      }
      actual_[0] = expected_;
      continue;
    }
    where +=
        " (call 1 on the same inputs gave other values: correct only on the first call, "
        "or the kernel keeps state between calls)";
    if (!compare_outputs(cs, "correctness", call_no, variant, where, nullptr, 1)) return false;
    note_nondeterminism(cs, actual_[0], actual_[1]);
  }
  return true;
}

bool Runner::expect_case(const Shape& shape, int seed, double* bytes) {
  CaseState cs(ctx_, shape, seed);
  {
    StepTimer timer(&times_.setup);
    if (!run_setup(cs)) return false;
  }
  for (auto& b : cs.inputs) *bytes += double(BufferAccess::capacity_bytes(*b));
  for (const auto& b : cs.sets[kExpectedSet]) *bytes += double(BufferAccess::capacity_bytes(*b));
  StepTimer timer(&times_.reference);
  CallOutcome out = call(cs, Impl::Reference, kExpectedSet, 0, 0);
  if (!out.ok) {
    out.message = "reference: " + out.message;
    record_failure(cs, "reference", 0,
                   "reference failed on shape " + shape.id() + " seed " + std::to_string(seed),
                   out);
    return false;
  }
  return dump_outputs(cs, kExpectedSet, "case", 0, 0, {});
}

// ---- the split judge: the checker -----------------------------------------------------------

namespace {

std::string entry_key(const std::string& kind, const std::string& shape, int seed, int call) {
  return kind + "|" + shape + "|" + std::to_string(seed) + "|" + std::to_string(call);
}

double output_bytes(const std::vector<ExpectedOutput>& outputs) {
  double n = 0;
  for (const ExpectedOutput& o : outputs) n += double(o.bytes.size());
  return n;
}

}  // namespace

bool Runner::load_expected(JudgeCache& cache) {
  if (cache.expected_loaded) return true;
  std::string err;
  if (!read_dump(options_.expected_dir, &cache.expected, &err)) {
    report_.fail(Status::Error, "the reference's outputs cannot be read: " + err, "judge");
    say("kernelfoundry harness: " + report_.reason);
    return false;
  }
  cache.expected_outputs.assign(cache.expected.size(), {});
  for (std::size_t i = 0; i < cache.expected.size(); ++i) {
    const DumpEntry& e = cache.expected[i];
    double bytes = 0;
    for (const DumpedOutput& o : e.outputs) bytes += double(o.count) * double(dtype_size(o.dtype));
    if (e.kind != "case" || !cache.reserve(bytes)) continue;
    std::vector<ExpectedOutput> want;
    if (!read_expected(e, &want)) {
      cache.release(bytes);
      return false;
    }
    cache.expected_outputs[i] = std::move(want);
  }
  cache.expected_loaded = true;
  return true;
}

bool Runner::read_expected(const DumpEntry& e, std::vector<ExpectedOutput>* want) {
  want->clear();
  for (const DumpedOutput& o : e.outputs) {
    ExpectedOutput w{o.name, o.dtype, Buffer::Role(o.role), o.count, o.tol, {}};
    std::string err;
    if (!read_dumped(options_.expected_dir, o, &w.bytes, &err)) {
      report_.fail(Status::Error, "the reference's outputs cannot be read: " + err, "judge");
      say("kernelfoundry harness: " + report_.reason);
      return false;
    }
    want->push_back(std::move(w));
  }
  return true;
}

bool Runner::reference_outputs(CaseState& cs, std::vector<ExpectedOutput>* want) {
  CallOutcome out;
  {
    StepTimer timer(&times_.reference);
    // The reference is trusted: its guards are checked, not its inputs (perturbed values would
    // need new checksums, and the reference does not write its inputs).
    prepare_set(cs, kExpectedSet, 0);
    out = invoke(cs, Impl::Reference, kExpectedSet, 0);
    if (out.ok) check_integrity(cs, kExpectedSet, &out, /*inputs=*/false);
  }
  if (!out.ok) {
    out.message = "reference: " + out.message;
    record_failure(cs, "reference", 0, "the reference failed on shape " + cs.shape.id(), out);
    report_.error_kind = "judge";
    return false;
  }
  std::size_t n = 0;
  for (std::size_t k = 0; k < cs.outputs.size(); ++k) {
    const OutputSpec& spec = cs.outputs[k];
    if (spec.role == Buffer::Role::Scratch) continue;
    if (want->size() <= n) want->emplace_back();
    ExpectedOutput& w = (*want)[n++];
    w.name = spec.name;
    w.dtype = spec.dtype;
    w.role = spec.role;
    w.count = cs.sets[kExpectedSet][k]->count();
    w.tol = spec.tol;
    to_host(*cs.sets[kExpectedSet][k], &w.bytes);
  }
  want->resize(n);
  return true;
}

bool Runner::compare_set(const DumpEntry& entry, const std::vector<ExpectedOutput>& want,
                         const std::string& phase, int variant, const std::string& where,
                         std::vector<unsigned char>* actual) {
  for (const ExpectedOutput& w : want) {
    CaseRecord rec;
    rec.phase = phase;
    rec.shape = entry.shape.id();
    rec.seed = entry.seed;
    rec.call = entry.call;
    rec.output = w.name;
    const DumpedOutput* o = nullptr;
    for (const DumpedOutput& d : entry.outputs)
      if (d.name == w.name) o = &d;
    std::string err;
    if (o == nullptr || o->dtype != w.dtype) {
      rec.status = Status::Wrong;
      rec.message = "output '" + w.name + "' was not handed over by the candidate's run";
    } else if (o->count != w.count) {
      rec.status = Status::ShapeMismatch;
      rec.message = "output '" + w.name + "' has " + std::to_string(o->count) +
                    " elements, the reference produced " + std::to_string(w.count);
    } else if (!read_dumped(options_.check_dir, *o, actual, &err)) {
      rec.status = Status::Wrong;
      rec.message = err;
    } else {
      rec.compared = true;
      rec.tol = w.tol;
      rec.cmp = compare(actual->data(), w.bytes.data(), w.dtype, w.count, w.tol);
      if (!rec.cmp.passed) {
        rec.status = Status::Wrong;
        long untouched = 0;
        if (w.role == Buffer::Role::Output) {
          std::vector<unsigned char> poison = poison_pattern(w.dtype, variant);
          untouched = count_pattern(actual->data(), w.dtype, w.count, poison.data());
        }
        if (w.count > 0 && untouched == w.count) {
          rec.message =
              "output '" + w.name + "' was never written (still holds the poison pattern)";
        } else {
          rec.message = "output '" + w.name + "': " + rec.cmp.describe(w.tol);
          if (untouched > 0)
            rec.message += "; " + std::to_string(untouched) + " of " + std::to_string(w.count) +
                           " elements still hold the poison pattern (never written)";
        }
      }
    }
    report_.cases.push_back(rec);
    if (rec.status != Status::Pass) {
      report_.fail(rec.status, where + ": " + rec.message);
      say("  FAIL " + where + ": " + rec.message);
      return false;
    }
  }
  return true;
}

const std::vector<ExpectedOutput>* Runner::post_outputs(JudgeCache& cache, const Shape& shape,
                                                        std::vector<ExpectedOutput>* computed) {
  // The same fresh inputs for every candidate of the job: the reference's outputs once.
  auto found = cache.post_outputs.find(shape.id());
  if (found != cache.post_outputs.end()) return &found->second;
  CaseState cs(ctx_, shape, options_.seeds + 2);
  {
    StepTimer timer(&times_.setup);
    if (!run_setup(cs)) return nullptr;
  }
  if (!reference_outputs(cs, computed)) return nullptr;
  if (!cache.reserve(output_bytes(*computed))) return computed;
  return &cache.post_outputs.emplace(shape.id(), std::move(*computed)).first->second;
}

CaseState* Runner::timed_case(JudgeCache& cache, const Shape& shape,
                              std::unique_ptr<CaseState>* owned) {
  // The timed calls' inputs, drawn once; each check re-applies that call's perturbation, runs the
  // reference and puts the inputs back.
  if (auto found = cache.timed_cases.find(shape.id()); found != cache.timed_cases.end())
    return found->second.state.get();
  *owned = std::make_unique<CaseState>(ctx_, shape, options_.seeds + 1);
  {
    StepTimer timer(&times_.setup);
    if (!run_setup(**owned)) return nullptr;
  }
  double bytes = 0;
  for (auto& b : (*owned)->inputs) bytes += double(BufferAccess::capacity_bytes(*b));
  for (const auto& set : (*owned)->sets)
    for (const auto& b : set) bytes += 2 * double(BufferAccess::capacity_bytes(*b));
  CaseState* cs = owned->get();
  if (cache.reserve(bytes)) {
    cache.timed_cases[shape.id()] = {std::move(*owned), bytes};
  }
  return cs;
}

void Runner::warm_judge() {
  auto start = Clock::now();
  times_ = StepTimes{};
  if (cache_ == nullptr || !load_expected(*cache_)) return;
  double largest = 0;
  for (const Shape& shape : suite_.benchmarks.front().shapes) {
    std::vector<ExpectedOutput> computed;
    std::unique_ptr<CaseState> owned;
    const std::vector<ExpectedOutput>* post = post_outputs(*cache_, shape, &computed);
    if (post == nullptr) return;
    CaseState* cs = timed_case(*cache_, shape, &owned);
    if (cs == nullptr) return;
    // The buffers every check reuses get their pages now, not in the first candidate's check.
    if (!reference_outputs(*cs, &cache_->timed_want)) return;
    for (const ExpectedOutput& o : *post) largest = std::max(largest, double(o.bytes.size()));
  }
  cache_->actual.assign(std::size_t(largest), 0);
  say("judge ready in " + fmt("%.2f s", seconds_since(start)) + " (setup " +
      fmt("%.2f", times_.setup) + ", reference " + fmt("%.2f", times_.reference) + ")");
}

void Runner::check() {
  auto start = Clock::now();
  times_ = StepTimes{};
  JudgeCache one_shot(0);
  JudgeCache& cache = cache_ != nullptr ? *cache_ : one_shot;
  if (!load_expected(cache)) return;
  std::vector<DumpEntry> got;
  std::string err;
  if (!read_dump(options_.check_dir, &got, &err)) {
    report_.fail(Status::Wrong, "the candidate's run left no readable outputs: " + err);
    say("  FAIL " + report_.reason);
    return;
  }
  std::map<std::string, const DumpEntry*> by_key;
  for (const DumpEntry& e : got) by_key[entry_key(e.kind, e.shape.id(), e.seed, e.call)] = &e;

  // Correctness: every case the reference wrote, call 1 (the candidate's run compared call 2
  // with call 1 itself), against the stored outputs.
  std::size_t checks = 0;
  auto stored_start = Clock::now();
  for (std::size_t i = 0; i < cache.expected.size(); ++i) {
    const DumpEntry& e = cache.expected[i];
    if (e.kind != "case" || options_.phase == Phase::Benchmark) continue;
    std::vector<ExpectedOutput> read_now;
    const std::vector<ExpectedOutput>* want = &cache.expected_outputs[i];
    if (want->empty() && !e.outputs.empty()) {
      if (!read_expected(e, &read_now)) return;
      want = &read_now;
    }
    std::string where = "correctness failed on shape " + e.shape.id() +
                        (is_hidden(e.shape) ? " (a hidden shape near the listed ones: the "
                                              "kernel must handle any size, not only the "
                                              "listed ones)"
                                            : "") +
                        " seed " + std::to_string(e.seed) + " call 1";
    auto it = by_key.find(entry_key("case", e.shape.id(), e.seed, 1));
    if (it == by_key.end()) {
      report_.fail(Status::Wrong, where + ": the candidate's run handed over no outputs for it");
      say("  FAIL " + report_.reason);
      return;
    }
    if (!compare_set(*it->second, *want, "correctness", 0, where, &cache.actual)) return;
    ++checks;
  }
  times_.calls = seconds_since(stored_start);

  // Timed calls and the call after timing: the reference runs here on the same inputs (the
  // perturbed elements re-applied), so the candidate's run never sees what it is compared with.
  const Benchmark& bench = suite_.benchmarks.front();
  for (const Shape& shape : bench.shapes) {
    if (options_.phase == Phase::Correctness) break;
    if (!options_.shape.empty() && shape.id() != options_.shape) continue;
    int timed = 0, post = 0;
    for (const DumpEntry& e : got) {
      if (e.shape.id() != shape.id() || (e.kind != "timed" && e.kind != "post")) continue;
      (e.kind == "timed" ? timed : post)++;
      int seed = options_.seeds + (e.kind == "timed" ? 1 : 2);
      std::string where = (e.kind == "timed" ? "wrong in timed call " + std::to_string(e.call)
                                             : std::string("wrong after the timing loop")) +
                          " on shape " + shape.id() +
                          (e.kind == "timed" ? " (inputs changed before every timed call)"
                                             : " (fresh inputs no earlier call saw)");
      if (e.seed != seed || (e.kind == "post" && !e.perturb.empty())) {
        report_.fail(Status::Wrong, where +
                                        ": the handed-over outputs do not describe the "
                                        "inputs the harness gave");
        say("  FAIL " + report_.reason);
        return;
      }
      const std::vector<ExpectedOutput>* want = nullptr;
      std::vector<ExpectedOutput> computed;
      if (e.kind == "post") {
        want = post_outputs(cache, shape, &computed);
        if (want == nullptr) return;
      } else {
        std::unique_ptr<CaseState> owned;
        CaseState* cs = timed_case(cache, shape, &owned);
        if (cs == nullptr) return;
        PerturbUndo applied;
        bool ok = apply_perturbation(*cs, e.perturb, &applied, &err);
        if (ok) ok = reference_outputs(*cs, &cache.timed_want);
        bool restored = true;
        try {
          restore_inputs(*cs, &applied);
        } catch (const std::exception&) {
          restored = false;
        }
        if (!restored) {
          // A case whose inputs may not be as drawn is not kept for the next check (a refused
          // perturbation wrote nothing, and a failed reference call left the inputs to restore).
          if (auto found = cache.timed_cases.find(shape.id()); found != cache.timed_cases.end()) {
            cache.release(found->second.bytes);
            cache.timed_cases.erase(found);
          }
        }
        if (!ok) {
          if (!report_.failed()) {
            report_.fail(Status::Wrong, where + ": " + err);
            say("  FAIL " + report_.reason);
          }
          return;
        }
        want = &cache.timed_want;
      }
      StepTimer timer(&times_.checks);
      if (!compare_set(e, *want, "benchmark", e.variant == 1 ? 1 : 0, where, &cache.actual)) {
        report_.add_flag(e.kind == "timed" ? "wrong_in_timed_call" : "wrong_after_timing",
                         report_.reason);
        return;
      }
      ++checks;
    }
    if (timed == 0 || post == 0) {
      report_.fail(Status::Wrong, "benchmark shape " + shape.id() +
                                      ": the candidate's run handed over no outputs of its " +
                                      (timed == 0 ? "timed calls" : "call after timing"));
      say("  FAIL " + report_.reason);
      return;
    }
  }
  report_.phase_seconds.emplace_back("check", seconds_since(start));
  report_.phase_seconds.emplace_back("check.stored", times_.calls);
  report_.phase_seconds.emplace_back("check.setup", times_.setup);
  report_.phase_seconds.emplace_back("check.reference", times_.reference);
  report_.phase_seconds.emplace_back("check.timed", times_.checks);
  say("check: " + std::to_string(checks) +
      " output sets of the candidate agree with the reference (" +
      fmt("%.2f s", seconds_since(start)) + ": stored cases " + fmt("%.2f", times_.calls) +
      ", setup " + fmt("%.2f", times_.setup) + ", reference " + fmt("%.2f", times_.reference) +
      ", timed compares " + fmt("%.2f", times_.checks) + ")");
}

// ---- benchmark ----------------------------------------------------------------------------

bool Runner::benchmark_shape(const Shape& shape) {
  // A seed the correctness phase did not use: the re-check after timing is one more seed.
  std::unique_ptr<CaseState> held;
  {
    StepTimer timer(&bench_times_.setup);
    held = take_case(shape, options_.seeds + 1);
    if (!held) return false;
  }
  CaseState& cs = *held;
  {
    StepTimer timer(&bench_times_.setup);
    // The split judge's candidate child runs no reference: its outputs go to the checker.
    if (!dumping() && !compute_expected(cs)) return false;
  }
  Device& device = *ctx_.device;
  ShapeTiming t;
  t.shape = shape.id();
  for (auto& b : cs.inputs) t.bytes += double(b->bytes());
  for (std::size_t k = 0; k < cs.outputs.size(); ++k) {
    if (cs.outputs[k].role != Buffer::Role::Scratch) {
      long count = dumping() ? cs.sets[kTestSet][k]->count() : expected_counts_[k];
      t.bytes += double(count) * double(dtype_size(cs.outputs[k].dtype));
    }
  }

  int calls = 0;
  bool cold = !options_.warm;
  // One call of the implementation under test: poison, flush (cold samples), run, time.
  std::vector<Perturbation> perturb;  // of the last call
  PerturbUndo undo;
  // The timer's notes (side-stream work past the stop event, the event time used instead of the
  // records): each such sample already counts the extra time, so one note alone gains a candidate
  // nothing and is most often a host hiccup between the stop event and the synchronise's return.
  // The flag needs the note in two calls or more.
  struct TimerNotes {
    long count = 0;
    std::string first;
    void add(std::string note) {
      if (note.empty()) return;
      if (count++ == 0) first = std::move(note);
    }
  } side_stream, timer;
  auto one_call = [&](bool flush, double* device_ms, double* host_ms) {
    // A memo keyed on the inputs never hits: every call sees inputs no earlier call saw.
    CallOutcome out =
        timed_call(cs, test_impl(), ++calls, flush, dumping() ? &undo : nullptr, &perturb);
    if (!out.ok) {
      record_failure(
          cs, "benchmark", calls,
          "benchmark failed on shape " + shape.id() + " (call " + std::to_string(calls) + ")", out);
      return false;
    }
    side_stream.add(device.take_timing_note());
    timer.add(device.take_timer_note());
    *device_ms = out.device_ms;
    *host_ms = out.host_ms;
    return true;
  };

  // Warm-up (its first calls double as the estimate): at least warmup_iters calls and
  // warmup_time seconds, but never more than half the budget when one call is slow.
  double dev = 0, host = 0;
  auto warm_start = Clock::now();
  double warm_cap = std::max(options_.warmup_time, 0.5 * options_.time_budget);
  std::vector<double> warm_ms;
  do {
    if (!one_call(false, &dev, &host)) return false;
    warm_ms.push_back(dev >= 0 ? dev : host);
  } while ((calls < std::max(1L, options_.warmup_iters) ||
            seconds_since(warm_start) < options_.warmup_time) &&
           seconds_since(warm_start) < warm_cap);
  t.warmup_calls = calls;
  t.warmup_estimate_ms = compute_stats(warm_ms).median;
  // Threads alive once the warm-up made the runtime's pools (OpenMP, drivers): a timed call that
  // leaves one more behind handed work to a thread that outlives the measurement.
  std::set<long> threads;
  if (dumping()) threads = thread_ids();
  // The timed calls whose outputs go to the checker: in each class of call the candidate can tell
  // apart (the poison variant its outputs held; whether it is the first call of a batch, which
  // follows a pause and, where the device asks, buffers placed anew), one call picked uniformly at
  // random after the fact (reservoir sampling). The candidate cannot know which calls are checked,
  // and computing honestly in one class only does not pass: a memo keyed on the pointers, or on
  // the pause before a call, misses, and so computes, on exactly the first call of a batch, which
  // one pick over all calls would hit 1 time in k for batches of k calls. A picked call's
  // outputs are kept on the device (a device-to-device copy, so the loop pays little even for
  // outputs of tens of MiB) and downloaded once after the loop; on the host where the device has
  // no room for the copies.
  struct TimedPick {
    Device* device = nullptr;
    long seen = 0, call = 0;
    int variant = 0;
    std::vector<Perturbation> perturb;
    bool on_device = true;
    std::vector<void*> kept;         // per output: a device buffer of its capacity (scratch: null)
    std::vector<std::size_t> bytes;  // per output: what the picked call produced
    std::vector<std::vector<unsigned char>> host;  // per output, when not on_device
    TimedPick() = default;
    TimedPick(const TimedPick&) = delete;
    TimedPick& operator=(const TimedPick&) = delete;
    ~TimedPick() { release(); }
    void release() noexcept {
      for (void*& p : kept)
        if (p != nullptr) device->release(p);
      kept.clear();
    }
  };
  std::array<TimedPick, 4> picks;
  auto keep_pick = [&](TimedPick& pick) {
    pick.device = &device;
    std::size_t n = cs.outputs.size();
    if (pick.on_device) {
      pick.kept.resize(n, nullptr);
      pick.bytes.assign(n, 0);
      try {
        for (std::size_t k = 0; k < n; ++k) {
          if (cs.outputs[k].role == Buffer::Role::Scratch) continue;
          // An output's produced count may change from call to call (Buffer::set_count): the
          // copy is sized by the capacity, the pick remembers the count.
          const Buffer& b = *cs.sets[kTestSet][k];
          if (pick.kept[k] == nullptr)
            pick.kept[k] = device.alloc(std::max<std::size_t>(BufferAccess::capacity_bytes(b), 1));
          device.copy(pick.kept[k], b.handle(), 0, b.bytes());
          pick.bytes[k] = b.bytes();
        }
        return;
      } catch (const DeviceError&) {  // no room for a copy: this class keeps its picks on the host
        pick.release();
        pick.on_device = false;
      }
    }
    pick.host.resize(n);
    for (std::size_t k = 0; k < n; ++k)
      if (cs.outputs[k].role != Buffer::Role::Scratch)
        to_host(*cs.sets[kTestSet][k], &pick.host[k]);
  };
  bool batch_start = false;  // set before a batch's first call (or after a move), cleared by it

  RunningStats running;
  long exceed = 0;
  double worst_dev = 0, worst_host = 0;
  // One timed call: its sample, the thread check, the reservoir picks of the checked calls.
  auto timed_call = [&](double* sample_ms) {
    if (!one_call(cold, &dev, &host)) return false;
    if (!threads.empty()) {
      // A thread the device runtime starts on its own (CUDA's and CUPTI's helpers appear after
      // hundreds of calls) waits idle; one the call handed work to is still running.
      std::set<long> now = thread_ids();
      bool working = false;
      for (long tid : now) {
        if (threads.count(tid) != 0) continue;
        if (thread_working(tid)) {
          working = true;
        } else {
          threads.insert(tid);
        }
      }
      if (working) {
        CallOutcome late;
        late.fail(Status::Error, "thread_outlived_call",
                  "a thread was still running after run() returned (" + std::to_string(now.size()) +
                      " threads, " + std::to_string(threads.size()) +
                      " idle or there before the call): all work must finish before run() "
                      "returns; do not hand work to threads that outlive the call");
        report_.add_flag("thread_outlived_call", shape.id() + ": " + late.message);
        record_failure(
            cs, "benchmark", calls,
            "benchmark failed on shape " + shape.id() + " (call " + std::to_string(calls) + ")",
            late);
        return false;
      }
    }
    int variant = (calls - 1) % 2;
    TimedPick& pick = picks[std::size_t(variant + (batch_start ? 2 : 0))];
    batch_start = false;
    if (dumping() && rng_() % std::uint64_t(++pick.seen) == 0) {
      pick.call = calls;
      pick.variant = variant;
      pick.perturb = perturb;
      keep_pick(pick);
    }
    bool device_timed = dev >= 0;
    double ms = device_timed ? dev : host;
    if (!device_timed) t.device_timed = false;
    if (device_timed && dev > host * 1.05 + 0.01) {
      ++exceed;
      if (dev - host > worst_dev - worst_host) {
        worst_dev = dev;
        worst_host = host;
      }
    }
    t.device_ms.push_back(ms);
    t.host_ms.push_back(host);
    if (device.last_timer() == "cupti") ++t.cupti_samples;
    running.add(ms);
    report_.sampled_ms_total += ms;
    *sample_ms = ms;
    return true;
  };

  if (pacer_ != nullptr) {
    // Paced: the evaluator starts each batch, and times a batch of the reference's between them.
    std::vector<double> batch_ms;
    for (long batch = 0;; ++batch) {
      PaceCommand cmd = pacer_->boundary(shape.id(), batch, t.warmup_estimate_ms, batch_ms);
      if (cmd.kind == PaceCommand::Kind::Error) {
        report_.fail(Status::Error, "paced benchmark on shape " + shape.id() + ": " + cmd.error,
                     "judge");
        say("  FAIL " + report_.reason);
        return false;
      }
      if (cmd.kind == PaceCommand::Kind::Next) break;
      // Every batch's first call is a class of its own, moved or not: it follows the pause in
      // which the reference's batch ran, which a candidate can measure (OpenCL never moves).
      if (batch > 0) (void)move_buffers(cs);
      batch_start = true;
      batch_ms.clear();
      for (long k = 0; k < cmd.calls; ++k) {
        double ms = 0;
        if (!timed_call(&ms)) return false;
        batch_ms.push_back(ms);
      }
    }
    t.stop = StopReason::Paced;
  } else {
    StopRule rule;
    rule.noise = options_.noise;
    rule.min_samples = options_.min_samples;
    rule.max_samples = options_.max_samples;
    rule.budget_s = options_.time_budget;
    PerfWindow counted(options_.perf_control);  // a profiling run counts these calls only
    if (options_.profile_one_call) ctx_.device->profile_next_call();  // ncu: the first call only
    if (!counted.problem().empty()) say("  note: not counted by perf: " + counted.problem());
    auto loop_start = Clock::now();
    // With KF_HARNESS_MOVE_BUFFERS=1 (a diagnostic: bench/ncu_fidelity.py), every
    // kStandaloneMoveEvery calls run on buffers placed anew (move_buffers), so the median is over
    // placements. Never by default: this path checks only its last call, and the first call on a
    // new placement is one that a memo keyed on the pointers computes honestly. Never in a
    // profiling run: perf counts the whole loop, and a move's page faults would read as the
    // kernel's.
    const char* move_env = std::getenv("KF_HARNESS_MOVE_BUFFERS");
    bool moving = move_env != nullptr && std::string(move_env) == "1" &&
                  options_.perf_control.empty() && !options_.profile_one_call;
    for (long k = 0;; ++k) {
      if (moving && k > 0 && k % kStandaloneMoveEvery == 0) batch_start = move_buffers(cs);
      double ms = 0;
      if (!timed_call(&ms)) return false;
      t.stop = should_stop(running, seconds_since(loop_start), rule);
      if (t.stop != StopReason::None) break;
    }
  }
  for (const auto& [flag, notes] :
       {std::pair<const char*, const TimerNotes*>{"work_outside_default_stream", &side_stream},
        {"timer_fallback", &timer}}) {
    if (notes->count == 0) continue;
    std::string text = shape.id() + ": " + notes->first + " (in " + std::to_string(notes->count) +
                       " of " + std::to_string(calls) + " calls)";
    if (notes->count >= 2) {
      report_.add_flag(flag, text);
    } else {
      say("  note, not flagged (once only; the sample counts the extra time): " + text);
    }
  }
  if (exceed > 0) {
    report_.add_flag("device_time_exceeds_host_time",
                     shape.id() + ": in " + std::to_string(exceed) + " of " +
                         std::to_string(t.device_ms.size()) + " samples; worst device " +
                         fmt("%.4f", worst_dev) + " ms vs host " + fmt("%.4f ms", worst_host));
  }

  // The last timed call must still be right, with inputs and guards intact.
  StepTimer after_timer(&bench_times_.after);
  std::string where =
      "wrong after timing loop on shape " + shape.id() + " (call " + std::to_string(calls) + ")";
  if (dumping()) {
    // The picked calls go to the checker with the inputs they saw, in call order; then the inputs
    // are restored (their checksums must hold) and one call on fresh inputs follows.
    std::array<std::size_t, 4> order = {0, 1, 2, 3};
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return picks[a].call < picks[b].call; });
    for (std::size_t i : order) {
      TimedPick& pick = picks[i];
      if (pick.call == 0) continue;
      std::vector<std::vector<unsigned char>> data = std::move(pick.host);
      if (pick.on_device) {
        data.assign(cs.outputs.size(), {});
        for (std::size_t k = 0; k < cs.outputs.size(); ++k) {
          if (pick.kept[k] == nullptr) continue;
          data[k].resize(pick.bytes[k]);
          if (!data[k].empty()) device.download(pick.kept[k], 0, data[k].data(), data[k].size());
        }
      }
      pick.release();
      if (!dump_outputs(cs, kTestSet, "timed", int(pick.call), pick.variant, pick.perturb, nullptr,
                        &data))
        return false;
    }
    restore_inputs(cs, &undo);
  }
  CallOutcome integrity;
  if (!check_integrity(cs, kTestSet, &integrity)) {
    record_failure(cs, "benchmark", calls, where, integrity);
    return false;
  }
  if (dumping()) {
    std::unique_ptr<CaseState> fresh_held = take_case(shape, options_.seeds + 2);
    if (!fresh_held) return false;
    CaseState& fresh = *fresh_held;
    prepare_set(fresh, kTestSet, 0);
    CallOutcome out = invoke(fresh, Impl::Candidate, kTestSet, ++calls);
    if (out.ok) check_integrity(fresh, kTestSet, &out);
    if (!out.ok) {
      record_failure(fresh, "benchmark", calls,
                     "failed after the timing loop on shape " + shape.id() + " (fresh inputs)",
                     out);
      return false;
    }
    if (!dump_outputs(fresh, kTestSet, "post", calls, 0, {})) return false;
    keep_case(std::move(fresh_held));
  } else if (!compare_outputs(cs, "benchmark", calls, (calls - 1) % 2, where, nullptr, 0)) {
    report_.add_flag("wrong_after_timing", report_.reason);
    return false;
  }

  t.stats = compute_stats(t.device_ms);
  t.host_median_ms = compute_stats(t.host_ms).median;
  t.converged = running.rel_sem() < options_.noise;
  if (options_.peak_gbps > 0 && t.bytes > 0) {
    double floor_ms = t.bytes / (options_.peak_gbps * 1e9) * 1e3;
    if (t.stats.median < floor_ms) {
      report_.add_flag("faster_than_roofline", shape.id() + ": median " +
                                                   fmt("%.4g ms", t.stats.median) + " < " +
                                                   fmt("%.4g ms", floor_ms) + " needed to move " +
                                                   fmt("%.4g MB", t.bytes / 1e6) + " at " +
                                                   fmt("%g GB/s", options_.peak_gbps));
    }
  }
  char row[256];
  double gbps = t.stats.median > 0 ? t.bytes / (t.stats.median * 1e-3) / 1e9 : 0;
  std::snprintf(row, sizeof row,
                "  %-28s %10.4f %10.4f %10.4f %9.4f %6ld %6.2f%% %10.4f %8.2f  %s%s",
                t.shape.c_str(), t.stats.median, t.stats.mean, t.stats.min, t.stats.stddev,
                t.stats.n, t.stats.rel_sem * 100, t.host_median_ms, gbps, stop_reason_name(t.stop),
                t.device_timed ? "" : " (host time)");
  say(row);
  report_.timings.push_back(std::move(t));
  keep_case(std::move(held));  // its inputs restored and found intact above
  return true;
}

namespace {
// A benchmark case's key in Runner::CaseCache.
std::string case_key(const Shape& shape, int seed) {
  return shape.id() + "#" + std::to_string(seed);
}
}  // namespace

std::unique_ptr<CaseState> Runner::take_case(const Shape& shape, int seed) {
  if (case_cache_ != nullptr && dumping()) {
    auto it = case_cache_->cases.find(case_key(shape, seed));
    if (it != case_cache_->cases.end()) {
      std::unique_ptr<CaseState> kept = std::move(it->second);
      case_cache_->cases.erase(it);  // back only after a run that leaves its inputs intact
      return kept;
    }
  }
  auto cs = std::make_unique<CaseState>(ctx_, shape, seed);
  if (!run_setup(*cs)) return nullptr;
  return cs;
}

void Runner::keep_case(std::unique_ptr<CaseState> cs) {
  if (case_cache_ == nullptr || !dumping() || !cs) return;
  case_cache_->cases[case_key(cs->shape, cs->seed)] = std::move(cs);
}

Runner::CallOutcome Runner::timed_call(CaseState& cs, Impl impl, int call, bool flush,
                                       PerturbUndo* undo, std::vector<Perturbation>* perturb) {
  prepare_set(cs, kTestSet, (call - 1) % 2);
  if (undo != nullptr) {
    StepTimer timer(&bench_times_.perturb);
    std::vector<Perturbation> made = perturb_inputs(cs, rng_, undo);
    if (perturb != nullptr) *perturb = std::move(made);
  }
  StepTimer timer(&bench_times_.calls);
  if (flush) {
    // What this call touches: its inputs and its set's outputs, in-outs and scratch.
    std::vector<void*> buffers;
    for (const auto& b : cs.inputs) buffers.push_back(b->handle());
    for (const auto& b : cs.sets[kTestSet]) buffers.push_back(b->handle());
    ctx_.device->flush_caches_for(buffers);
  } else {
    ctx_.device->synchronize();
  }
  return invoke(cs, impl, kTestSet, call);
}

// Without the moves, each process would keep one placement for the whole run: a lean of up to
// ~1.5% between the judge's reference and the child's candidate that no number of pairs cancels
// (the same code read 1.008-1.014 on one shape and 0.992-0.999 on another, in every copy of two
// jobs on the H100). With them, every pair samples placements on both sides and the interval
// sees their spread. Each buffer, in a shuffled order, goes behind a pad of 1-64 MiB (held until
// all are placed), so its new place is unrelated to its old one and to the other buffers'.
// KF_HARNESS_MOVE_BUFFERS=1 or 0 overrides the device's answer (a diagnostic; the CPU tests).
bool Runner::move_buffers(CaseState& cs) {
  Device& device = *ctx_.device;
  const char* env = std::getenv("KF_HARNESS_MOVE_BUFFERS");
  bool move = env != nullptr && *env != '\0' ? std::string(env) != "0" : device.placement_varies();
  if (!move) return false;
  std::vector<Buffer*> buffers;
  for (auto& b : cs.inputs) buffers.push_back(b.get());
  for (auto& b : cs.sets[kTestSet]) buffers.push_back(b.get());
  std::shuffle(buffers.begin(), buffers.end(), rng_);
  std::vector<void*> pads;
  bool moved = true;
  try {
    for (Buffer* b : buffers) {
      pads.push_back(device.alloc((1 + rng_() % 64) << 20));
      BufferAccess::move(*b);
    }
  } catch (const DeviceError& e) {  // no memory for a second copy: this batch keeps the places
    if (!move_note_said_) say(std::string("  note: buffers not moved for this batch: ") + e.what());
    move_note_said_ = true;
    moved = false;
  }
  for (void* p : pads) device.release(p);
  return moved;
}

bool Runner::time_reference(std::map<std::string, TimingCase>* cases, const std::string& shape_id,
                            long calls, std::vector<double>* samples_ms) {
  const Shape* shape = nullptr;
  for (const Shape& s : suite_.benchmarks.front().shapes)
    if (s.id() == shape_id) shape = &s;
  if (shape == nullptr) {
    report_.fail(Status::Error, "time: '" + shape_id + "' is not a benchmark shape", "judge");
    return false;
  }
  TimingCase& tc = (*cases)[shape_id];
  // Its own seed: inputs no correctness case or timed-call check uses.
  if (!tc.cs) {
    auto cs = std::make_unique<CaseState>(ctx_, *shape, options_.seeds + 3);
    if (!run_setup(*cs)) return false;
    tc.cs = std::move(cs);
  }
  CaseState& cs = *tc.cs;
  // The first request warms up as the candidate's benchmark does before its first batch.
  long warm = tc.calls == 0 ? std::max(1L, options_.warmup_iters) : 0;
  if (warm == 0) (void)move_buffers(cs);  // as the candidate's child does before each batch
  for (long k = 0; k < warm + calls; ++k) {
    bool timed = k >= warm;
    CallOutcome out = timed_call(cs, Impl::Reference, int(++tc.calls), timed && !options_.warm,
                                 &tc.undo, nullptr);
    if (!out.ok) {
      record_failure(cs, "benchmark", int(tc.calls),
                     "the reference failed while timed on shape " + shape_id, out);
      return false;
    }
    if (!timed) continue;
    samples_ms->push_back(out.device_ms >= 0 ? out.device_ms : out.host_ms);
    // What the candidate's loop does between its timed calls, done here too, so both sides'
    // calls follow the same gaps: a longer gap lets a runtime's idle workers fall asleep (an
    // OpenMP pool stops spinning), and waking them costs the next call time, most of all
    // when another process holds the cores.
    (void)thread_ids();
    if (rng_() % std::uint64_t(++tc.timed) == 0) {
      for (std::size_t k = 0; k < cs.outputs.size(); ++k)
        if (cs.outputs[k].role != Buffer::Role::Scratch) to_host(*cs.sets[kTestSet][k], &tc.picked);
    }
  }
  return true;
}

void Runner::benchmark() {
  auto start = Clock::now();
  bench_times_ = BenchTimes{};
  const Benchmark& bench = suite_.benchmarks.front();
  say("benchmark '" + bench.name + "' (" + std::string(options_.warm ? "warm" : "cold") +
      ", noise target " + fmt("%.2f%%", options_.noise * 100) + ", budget " +
      fmt("%.1f s", options_.time_budget) + " per shape, " + impl_name(test_impl()) + "):");
  char header[256];
  std::snprintf(header, sizeof header, "  %-28s %10s %10s %10s %9s %6s %7s %10s %8s  %s", "shape",
                "median_ms", "mean_ms", "min_ms", "std_ms", "n", "noise", "host_ms", "GB/s",
                "stop");
  say(header);
  bool matched = options_.shape.empty();
  for (const Shape& shape : bench.shapes) {
    if (!options_.shape.empty() && shape.id() != options_.shape) continue;
    matched = true;
    bool ok;
    try {
      ok = benchmark_shape(shape);
    } catch (const DeviceError& e) {  // from the harness's own device calls (fill, flush, copy)
      report_.fail(Status::Error, "benchmark on shape " + shape.id() + ": " + e.what(), "device");
      say("  FAIL benchmark on shape " + shape.id() + ": " + e.what());
      ok = false;
    }
    if (!ok) break;
  }
  if (!matched) {
    std::string ids;
    for (const Shape& shape : bench.shapes) ids += (ids.empty() ? "" : ", ") + shape.id();
    report_.fail(Status::Error,
                 "--shape " + options_.shape + " is not a benchmark shape of '" + bench.name +
                     "' (shapes: " + ids + ")",
                 "usage");
    say("  FAIL " + report_.reason);
  }
  report_.phase_seconds.emplace_back("benchmark", seconds_since(start));
  report_.phase_seconds.emplace_back("benchmark.setup", bench_times_.setup);
  report_.phase_seconds.emplace_back("benchmark.perturb", bench_times_.perturb);
  report_.phase_seconds.emplace_back("benchmark.calls", bench_times_.calls);
  report_.phase_seconds.emplace_back("benchmark.after", bench_times_.after);
}

}  // namespace kernelfoundry
