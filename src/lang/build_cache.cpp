// Runs a build plan with a content-addressed cache: objects and binaries are stored under their
// cache key (written via a temporary file and rename), so unchanged parts are never rebuilt.
#include <unistd.h>

#include <chrono>
#include <functional>
#include <thread>

#include "lang/lang.h"
#include "proc/sandbox.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {
namespace {

// Copies `from` into the cache at `to` through a temporary name, so readers never see half a file.
Status publish(const fs::path& from, const fs::path& to) {
  KF_RETURN_IF_ERROR(make_dirs(to.parent_path()));
  fs::path tmp = to;
  tmp += ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) + "." +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::error_code ec;
  fs::copy_file(from, tmp, fs::copy_options::overwrite_existing, ec);
  if (!ec) fs::permissions(tmp, fs::status(from, ec).permissions(), ec);
  if (!ec) fs::rename(tmp, to, ec);
  if (ec) {
    std::string cause = io_error_text(ec.value());
    fs::remove(tmp, ec);
    return Status::error("cannot store " + to.string() +
                         " in the build cache (paths.cache_dir): " + cause);
  }
  return Status::ok();
}

std::string step_text(const BuildStep& step, const ProcessResult& r) {
  std::string text = "$ " + step.label + "\n" + r.output;
  if (!r.success()) text += "\n[" + step.label + ": " + r.describe() + "]\n";
  return text;
}

}  // namespace

BuildOutcome run_build(const BuildPlan& plan, const fs::path& cache_dir, const BuildLimits& limits,
                       ProcessRunner& runner) {
  auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  BuildOutcome out;
  std::error_code ec;
  fs::path build_dir = plan.binary.parent_path();
  if (Status s = make_dirs(build_dir / "obj"); !s) {
    out.error = out.environment_error = s.message();
    return out;
  }

  fs::path bin_cached = cache_dir / "bin" / plan.link.cache_key;
  if (fs::exists(bin_cached, ec)) {
    out.ok = true;
    out.steps_cached = static_cast<int>(plan.compiles.size()) + 1;
    out.binary = bin_cached;
    out.seconds = elapsed();
    return out;
  }

  // Compile what the cache lacks, in parallel.
  std::vector<ProcessSpec> specs;
  std::vector<size_t> which;
  std::vector<std::pair<std::string, std::string>> object_paths;  // plan output -> cached object
  for (size_t i = 0; i < plan.compiles.size(); ++i) {
    const BuildStep& step = plan.compiles[i];
    fs::path cached = cache_dir / "obj" / (step.cache_key + ".o");
    object_paths.push_back({step.output.string(), cached.string()});
    if (fs::exists(cached, ec)) {
      ++out.steps_cached;
      continue;
    }
    ProcessSpec spec;
    spec.argv = step.argv;
    spec.work_dir = build_dir;
    spec.timeout_s = limits.timeout_s;
    spec.inactivity_timeout_s = limits.inactivity_timeout_s;
    spec.output_cap = limits.output_cap;
    specs.push_back(sandboxed(std::move(spec)));
    which.push_back(i);
  }
  if (!specs.empty()) {
    std::vector<ProcessResult> results = runner.run_all(specs, limits.parallel);
    out.steps_run += static_cast<int>(specs.size());
    for (size_t k = 0; k < results.size(); ++k) {
      const BuildStep& step = plan.compiles[which[k]];
      const ProcessResult& r = results[k];
      out.output += step_text(step, r);
      if (!r.success()) {
        if (out.failed_step.empty()) {
          out.failed_step = step.label;
          out.timed_out = r.timed_out || r.inactive;
          out.error = step.label + " failed: " + (r.started ? r.describe() : r.start_error);
        }
        if (std::string env = environment_fault(r, true, build_dir);
            !env.empty() && out.environment_error.empty())
          out.environment_error = step.label + ": " + env;
        continue;
      }
      if (Status s = publish(step.output, cache_dir / "obj" / (step.cache_key + ".o")); !s) {
        out.error = s.message();
        out.failed_step = step.label;
        if (out.environment_error.empty()) out.environment_error = s.message();
      }
    }
    if (!out.failed_step.empty()) {
      out.seconds = elapsed();
      return out;
    }
  }

  // Link from the cached objects.
  double left = limits.timeout_s - elapsed();
  if (left <= 0) {
    out.timed_out = true;
    out.failed_step = plan.link.label;
    out.error = strprintf("build timed out after %.0f s (build_timeout)", limits.timeout_s);
    out.seconds = elapsed();
    return out;
  }
  ProcessSpec link;
  link.argv = plan.link.argv;
  for (auto& arg : link.argv) {
    for (const auto& [planned, cached] : object_paths) {
      if (arg == planned) arg = cached;
    }
  }
  link.work_dir = build_dir;
  link.timeout_s = left;
  link.inactivity_timeout_s = limits.inactivity_timeout_s;
  link.output_cap = limits.output_cap;
  ProcessResult r = runner.run(sandboxed(std::move(link)));
  ++out.steps_run;
  out.output += step_text(plan.link, r);
  if (!r.success()) {
    out.failed_step = plan.link.label;
    out.timed_out = r.timed_out || r.inactive;
    out.error = plan.link.label + " failed: " + (r.started ? r.describe() : r.start_error);
    if (std::string env = environment_fault(r, true, build_dir); !env.empty())
      out.environment_error = plan.link.label + ": " + env;
    out.seconds = elapsed();
    return out;
  }
  if (Status s = publish(plan.binary, bin_cached); !s) {
    out.error = out.environment_error = s.message();
    out.failed_step = plan.link.label;
    out.seconds = elapsed();
    return out;
  }
  fs::remove(plan.binary, ec);
  out.ok = true;
  out.binary = bin_cached;
  out.seconds = elapsed();
  return out;
}

}  // namespace kf
