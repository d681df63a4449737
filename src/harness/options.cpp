// Command-line parsing for the task binary.
#include "harness/options.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

namespace kernelfoundry {
namespace {

const std::vector<std::string>& flag_names() {
  static const std::vector<std::string> names = {"--ref",
                                                 "--warm",
                                                 "--list",
                                                 "--help",
                                                 "--serve",
                                                 "--no-benchmark-shapes",
                                                 "--profile-one-call"};
  return names;
}

const std::vector<std::string>& value_names() {
  static const std::vector<std::string> names = {
      "--phase",           "--seeds",       "--large-shape-mib", "--out",          "--params",
      "--template-params", "--kernel-dir",  "--noise",           "--min-samples",  "--max-samples",
      "--time-budget",     "--warmup-time", "--warmup-iters",    "--peak-gbps",    "--shape",
      "--expected-out",    "--dump-dir",    "--check",           "--expected",     "--extra-shapes",
      "--cache-mib",       "--pace-in",     "--pace-out",        "--perf-control", "--sweep"};
  return names;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string nearest_option(const std::string& name) {
  std::string best;
  std::size_t best_d = 4;  // suggest only close typos
  for (const auto* list : {&flag_names(), &value_names()}) {
    for (const std::string& candidate : *list) {
      std::size_t d = edit_distance(name, candidate);
      if (d < best_d) {
        best_d = d;
        best = candidate;
      }
    }
  }
  return best;
}

bool parse_double(const std::string& key, const std::string& text, double min, double* out,
                  std::string* err) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(v >= min)) {
    *err = key + " expects a number >= " + std::to_string(min) + ", got '" + text + "'";
    return false;
  }
  *out = v;
  return true;
}

bool parse_long(const std::string& key, const std::string& text, long min, long* out,
                std::string* err) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || v < min) {
    *err = key + " expects an integer >= " + std::to_string(min) + ", got '" + text + "'";
    return false;
  }
  *out = v;
  return true;
}

bool set_string(const std::string& key, const std::string& value, std::string* out,
                std::string* err) {
  if (value.empty()) {
    *err = key + " needs a non-empty value";
    return false;
  }
  *out = value;
  return true;
}

bool apply_value(const std::string& key, const std::string& value, Options* o, std::string* err) {
  long n = 0;
  if (key == "--phase") {
    if (value == "correctness") {
      o->phase = Phase::Correctness;
    } else if (value == "benchmark") {
      o->phase = Phase::Benchmark;
    } else if (value == "all") {
      o->phase = Phase::All;
    } else {
      *err = "--phase expects correctness, benchmark or all, got '" + value + "'";
      return false;
    }
    return true;
  }
  if (key == "--seeds") {
    if (!parse_long(key, value, 1, &n, err)) return false;
    o->seeds = int(n);
    return true;
  }
  if (key == "--large-shape-mib") return parse_double(key, value, 0, &o->large_shape_mib, err);
  if (key == "--out") return set_string(key, value, &o->out, err);
  if (key == "--shape") return set_string(key, value, &o->shape, err);
  if (key == "--perf-control") return set_string(key, value, &o->perf_control, err);
  if (key == "--params") return set_string(key, value, &o->params_file, err);
  if (key == "--template-params") return set_string(key, value, &o->template_params, err);
  if (key == "--kernel-dir") return set_string(key, value, &o->kernel_dir, err);
  if (key == "--noise") return parse_double(key, value, 0, &o->noise, err);
  if (key == "--min-samples") return parse_long(key, value, 1, &o->min_samples, err);
  if (key == "--max-samples") return parse_long(key, value, 1, &o->max_samples, err);
  if (key == "--time-budget") return parse_double(key, value, 0, &o->time_budget, err);
  if (key == "--warmup-time") return parse_double(key, value, 0, &o->warmup_time, err);
  if (key == "--warmup-iters") return parse_long(key, value, 0, &o->warmup_iters, err);
  if (key == "--peak-gbps") return parse_double(key, value, 0, &o->peak_gbps, err);
  if (key == "--expected-out") return set_string(key, value, &o->expected_out, err);
  if (key == "--dump-dir") return set_string(key, value, &o->dump_dir, err);
  if (key == "--check") return set_string(key, value, &o->check_dir, err);
  if (key == "--expected") return set_string(key, value, &o->expected_dir, err);
  if (key == "--extra-shapes") return set_string(key, value, &o->extra_shapes, err);
  if (key == "--cache-mib") return parse_double(key, value, 0, &o->cache_mib, err);
  if (key == "--pace-in") return set_string(key, value, &o->pace_in, err);
  if (key == "--pace-out") return set_string(key, value, &o->pace_out, err);
  if (key == "--sweep") return set_string(key, value, &o->sweep, err);
  *err = "internal: unhandled option " + key;
  return false;
}

}  // namespace

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::Correctness:
      return "correctness";
    case Phase::Benchmark:
      return "benchmark";
    case Phase::All:
      return "all";
  }
  return "?";
}

bool parse_options(const std::vector<std::string>& args, Options* out, std::string* err) {
  Options o;
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg == "-h") arg = "--help";
    std::string key = arg, value;
    bool inline_value = false;
    std::size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      key = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      inline_value = true;
    }
    const auto& flags = flag_names();
    const auto& values = value_names();
    if (std::find(flags.begin(), flags.end(), key) != flags.end()) {
      if (inline_value) {
        *err = key + " takes no value";
        return false;
      }
      if (key == "--ref") o.ref = true;
      if (key == "--warm") o.warm = true;
      if (key == "--profile-one-call") o.profile_one_call = true;
      if (key == "--list") o.list = true;
      if (key == "--help") o.help = true;
      if (key == "--serve") o.serve = true;
      if (key == "--no-benchmark-shapes") o.no_benchmark_shapes = true;
      continue;
    }
    if (std::find(values.begin(), values.end(), key) != values.end()) {
      if (!inline_value) {
        if (i + 1 >= args.size()) {
          *err = key + " needs a value";
          return false;
        }
        value = args[++i];
      }
      if (!apply_value(key, value, &o, err)) return false;
      continue;
    }
    *err = "unknown option '" + arg + "'";
    std::string near = nearest_option(key);
    if (!near.empty()) *err += "; did you mean '" + near + "'?";
    *err += " (see --help)";
    return false;
  }
  if (o.min_samples > o.max_samples) {
    *err = "--min-samples (" + std::to_string(o.min_samples) + ") exceeds --max-samples (" +
           std::to_string(o.max_samples) + ")";
    return false;
  }
  int modes = !o.expected_out.empty() + !o.dump_dir.empty() + !o.check_dir.empty() + o.serve;
  if (modes > 1) {
    *err = "--expected-out, --dump-dir, --check and --serve are separate modes; give one";
    return false;
  }
  if (!o.expected_out.empty() && !o.ref) {
    *err = "--expected-out writes the reference's outputs: it needs --ref";
    return false;
  }
  if (!o.dump_dir.empty() && o.ref) {
    *err = "--dump-dir runs the candidate: it cannot be combined with --ref";
    return false;
  }
  if (!o.check_dir.empty() && o.expected_dir.empty()) {
    *err = "--check DIR needs --expected DIR (the reference's outputs)";
    return false;
  }
  if (o.serve && (o.expected_dir.empty() || !o.ref)) {
    *err = "--serve judges candidates' outputs: it needs --ref and --expected DIR";
    return false;
  }
  if (o.pace_in.empty() != o.pace_out.empty()) {
    *err = "--pace-in and --pace-out go together (the two FIFOs of the paced benchmark)";
    return false;
  }
  if (!o.pace_in.empty() && o.dump_dir.empty()) {
    *err = "--pace-in/--pace-out pace the candidate child's timed calls: they need --dump-dir";
    return false;
  }
  if (!(o.noise > 0)) {
    *err = "--noise must be > 0";
    return false;
  }
  *out = o;
  return true;
}

std::string usage_text(const std::string& program) {
  return "usage: " + program +
         " [options]\n"
         "  --ref                 test the reference instead of the candidate\n"
         "  --phase P             correctness | benchmark | all (default all)\n"
         "  --seeds N             correctness seeds 1..N (default 3)\n"
         "  --large-shape-mib M   shapes with more than M MiB of buffers get one correctness seed\n"
         "                        (default 64; 0 = every seed on every shape)\n"
         "  --out FILE            write the result JSON (atomically)\n"
         "  --params FILE         runtime parameters (JSON object), read with Case::param\n"
         "  --template-params J   template parameters (JSON object text or file)\n"
         "  --kernel-dir DIR      where kernel files are looked up (default .)\n"
         "  --noise F             target relative noise of the mean (default 0.005)\n"
         "  --min-samples N       (default 10)   --max-samples N (default 2000)\n"
         "  --time-budget S       sampling seconds per benchmark shape (default 2.0)\n"
         "  --warmup-time S       (default 0.05) --warmup-iters N (default 3)\n"
         "  --warm                no cache flush before samples (default: cold)\n"
         "  --peak-gbps F         flag timings faster than F GB/s allows\n"
         "  --list                print the shapes as JSON and exit\n"
         "  --shape ID            benchmark only the shape with this id (e.g. rows=8,cols=64);\n"
         "                        for profiling one shape under ncu\n"
         "  --perf-control C,A    perf stat's control FIFOs (perf stat --control fifo:C,A -D -1):\n"
         "                        counters enabled around each shape's timed calls only\n"
         "  --profile-one-call    Nsight Compute's range (ncu --profile-from-start off) covers "
         "the\n"
         "                        first timed call only (CUDA; CUPTI timing off in this run)\n"
         "  --extra-shapes J      more correctness shapes, JSON [{\"dims\": {\"rows\": 9}}, ...]\n"
         "  --no-benchmark-shapes the correctness phase leaves the benchmark shapes out\n"
         "split judge (the evaluator's protocol):\n"
         "  --ref --expected-out DIR   write the reference's correctness outputs to DIR\n"
         "  --dump-dir DIR        run the candidate only; write its outputs to DIR (no verdict on\n"
         "                        values: the checker gives it)\n"
         "  --check DIR --expected DIR2  compare a candidate's outputs in DIR with DIR2, running\n"
         "                        the reference for the timed calls it checks\n"
         "  --ref --serve --expected DIR  the same for many candidates: one request per line on\n"
         "                        stdin, 'check NONCE PHASE DUMP_DIR OUT_FILE'; each answered by\n"
         "                        the line 'kf-judge-done NONCE EXIT_CODE' after OUT_FILE is "
         "written\n"
         "  --cache-mib M         --serve keeps up to M MiB of the reference's outputs and inputs\n"
         "                        (default: a quarter of the memory, at most 4096)\n"
         "  --pace-in F --pace-out F2  (with --dump-dir) the timed calls run in batches the\n"
         "                        evaluator starts through these FIFOs, each next to a batch of\n"
         "                        the reference's timed by --serve's 'time' request\n"
         "  --sweep FILE          check and briefly time several template combinations in turn;\n"
         "                        FILE: [{\"template_params\": {..}, \"out\": F, \"dump_dir\": D}, "
         "...],\n"
         "                        a result file and dump per combination; stops after one that\n"
         "                        fails with an error (the rest are left for another run)\n"
         "exit codes: 0 pass, 1 wrong values / shape mismatch, 2 runtime error\n";
}

}  // namespace kernelfoundry
