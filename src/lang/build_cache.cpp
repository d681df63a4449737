// Runs a build plan with a content-addressed cache: objects and binaries are stored under their
// cache key (written via a temporary file and rename) with their SHA-256 beside them, so unchanged
// parts are never rebuilt and a changed one is never used. Every step runs sandboxed.
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "lang/lang.h"
#include "lang/nvcc_split.h"
#include "proc/pause_group.h"
#include "proc/sandbox.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kf {
namespace {

fs::path hash_path(const fs::path& cached) {
  fs::path p = cached;
  p += ".sha256";
  return p;
}

Result<std::string> file_hash(const fs::path& path) {
  auto bytes = read_file(path);
  if (!bytes) return Result<std::string>::error(bytes.message());
  return sha256_hex(*bytes);
}

// Whether the cache holds `cached` as it was stored. One whose content no longer matches its
// recorded hash (or that has none) is removed, and `note` says so for the build output.
bool cached_intact(const fs::path& cached, const std::string& what, std::string& note) {
  std::error_code ec;
  if (!fs::exists(cached, ec)) return false;
  auto recorded = read_file(hash_path(cached));
  auto actual = file_hash(cached);
  if (recorded && actual && trim(*recorded) == *actual) return true;
  note += "[cached " + what + " " + cached.string() +
          (recorded ? " changed on disk since it was stored; rebuilt]\n"
                    : " has no recorded content hash; rebuilt]\n");
  fs::remove(cached, ec);
  fs::remove(hash_path(cached), ec);
  return false;
}

// Copies `from` into the cache at `to` through a temporary name, so readers never see half a file.
// Its hash is stored first, so a reader that sees the file also sees its hash.
Status publish(const fs::path& from, const fs::path& to) {
  KF_RETURN_IF_ERROR(make_dirs(to.parent_path()));
  fs::path tmp = to;
  tmp += ".tmp." + std::to_string(::getpid()) + "." +
         std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id())) + "." +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
  std::error_code ec;
  if (auto hash = file_hash(from); !hash) {
    return Status::error("cannot read " + from.string() +
                         " to store it in the build cache: " + hash.message());
  } else if (Status s = write_file(hash_path(to), *hash + "\n"); !s) {
    return Status::error("cannot store the hash of " + to.string() +
                         " in the build cache (paths.cache_dir): " + s.message());
  }
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

// Lines of `text` without repeats: the two sides of a split nvcc build both parse the source
// and may print the same warning.
std::string without_repeated_lines(const std::string& text) {
  std::string out;
  std::set<std::string> seen;
  for (const std::string& line : split_lines(text)) {
    if (!line.empty() && !seen.insert(line).second) continue;
    out += line + "\n";
  }
  return out;
}

// nvcc's dry run lists the same steps for every compile of the same command up to the folder the
// compile's paths lie under (a candidate's work folder: its src/ and build/): it never reads the
// source. So a process keeps each listing with that folder as a placeholder, and a job runs the
// dry run (a sandbox and nvcc's driver, about 40 ms on a 2-core machine) once per distinct
// command, not per candidate.
class DryRunMemo {
 public:
  // The folder of a compile whose output is FOLDER/build/obj/NAME.o and whose source lies under
  // FOLDER too; empty when the step is laid out otherwise (then nothing is kept).
  static std::string folder_of(const BuildStep& step) {
    fs::path folder = step.output.parent_path().parent_path().parent_path();
    std::string prefix = folder.string() + "/";
    if (!folder.is_absolute() || std::distance(folder.begin(), folder.end()) < 3) return "";
    bool source_inside = false;
    for (std::size_t i = 0; i + 1 < step.argv.size(); ++i)
      if (step.argv[i] == "-c") source_inside = step.argv[i + 1].rfind(prefix, 0) == 0;
    return source_inside ? prefix : "";
  }
  static std::string key(const ProcessSpec& dry, const std::string& folder) {
    std::string k;
    for (const std::string& a : dry.argv) k += replace_all(a, folder, kMark) + '\n';
    for (const auto& [name, value] : dry.env)
      k += name + '=' + replace_all(value, folder, kMark) + '\n';
    return k;
  }
  std::optional<std::string> find(const std::string& key, const std::string& folder) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = listings_.find(key);
    if (it == listings_.end()) return std::nullopt;
    return replace_all(it->second, kMark, folder);
  }
  void keep(const std::string& key, const std::string& folder, const std::string& listing) {
    std::lock_guard<std::mutex> lock(mu_);
    if (listings_.size() >= 256) listings_.clear();  // many distinct commands: a bound, not an LRU
    listings_[key] = replace_all(listing, folder, kMark);
  }

 private:
  static constexpr const char* kMark = "\x01kf-folder\x01/";
  std::mutex mu_;
  std::map<std::string, std::string> listings_;
};

DryRunMemo& dry_run_memo() {
  static DryRunMemo memo;
  return memo;
}

// One nvcc compile with its host and device sides side by side (nvcc_split.h). Whenever that
// cannot be done, or a side fails, nvcc runs as planned: a compile error is then nvcc's own
// message, said once.
ProcessResult run_nvcc_split(const BuildStep& step, const ProcessSpec& base,
                             const SandboxOptions& sandbox, ProcessRunner& runner) {
  // `why`: said in the build output when the split could not be tried (not for a compile
  // error, which nvcc then reports itself).
  auto as_planned = [&](const std::string& why = "") {
    ProcessSpec spec = base;
    spec.argv = step.argv;
    ProcessResult r = runner.run(sandboxed(std::move(spec), sandbox));
    if (!why.empty())
      r.output =
          "[" + step.label + ": nvcc's steps ran one after another: " + why + "]\n" + r.output;
    return r;
  };
  std::error_code ec;
  fs::path keep = step.output;
  keep += ".nvcc";
  fs::remove_all(keep, ec);
  if (!fs::create_directories(keep, ec) || ec) return as_planned("cannot create " + keep.string());
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } cleanup{keep};
  ProcessSpec dry = base;
  dry.argv = step.argv;
  dry.argv.insert(dry.argv.end(), {"--dryrun", "--keep", "--keep-dir", keep.string()});
  std::string folder = DryRunMemo::folder_of(step);
  std::string memo_key = folder.empty() ? "" : DryRunMemo::key(dry, folder);
  std::optional<std::string> listing;
  if (!folder.empty()) listing = dry_run_memo().find(memo_key, folder);
  const bool listed_now = !listing;
  if (listed_now) {
    ProcessResult listed = runner.run(sandboxed(std::move(dry), sandbox));
    if (!listed.success()) return as_planned("nvcc --dryrun failed: " + listed.describe());
    listing = std::move(listed.output);
  }
  auto split = split_nvcc_steps(*listing);
  if (!split) return as_planned(split.message());
  // Kept only once it splits: a listing the split refuses is listed (and refused) again.
  if (listed_now && !folder.empty()) dry_run_memo().keep(memo_key, folder, *listing);
  if (split->module_id_file.parent_path() != keep)
    return as_planned("the module id file is outside " + keep.string());
  std::string source = step.label.substr(step.label.rfind(' ') + 1);
  std::vector<std::pair<fs::path, std::string>> files = {
      {split->module_id_file, nvcc_module_id(step.cache_key, source)},
      {keep / "host.sh", split->host_script},
      {keep / "device.sh", split->device_script},
      {keep / "final.sh", split->final_script}};
  for (const auto& [path, text] : files) {
    if (Status w = write_file(path, text); !w) return as_planned(w.message());
  }
  auto script = [&](const char* name) {
    ProcessSpec spec = base;
    spec.argv = {"/bin/sh", (keep / name).string()};
    return sandboxed(std::move(spec), sandbox);
  };
  std::vector<ProcessResult> sides = runner.run_all({script("host.sh"), script("device.sh")}, 2);
  for (const ProcessResult& r : sides) {
    if (r.timed_out || r.inactive) return r;  // the source's own cost: no second try
  }
  if (!sides[0].success() || !sides[1].success()) return as_planned();
  ProcessResult done = runner.run(script("final.sh"));
  if (done.timed_out || done.inactive) return done;
  if (!done.success()) return as_planned();
  done.output = without_repeated_lines(sides[0].output + sides[1].output + done.output);
  return done;
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
  // Time the job's timing gate held the build paused since t0: no part of the build's budget.
  auto paused_since_t0 = limits.pause_group != nullptr ? limits.pause_group->paused_total(t0)
                                                       : PauseGroup::Clock::duration::zero();
  auto paused = [&] {
    if (limits.pause_group == nullptr) return 0.0;
    return std::chrono::duration<double>(limits.pause_group->paused_total() - paused_since_t0)
        .count();
  };
  BuildOutcome out;
  auto stamp = [&] {
    out.seconds = elapsed();
    out.paused_s = paused();
  };
  std::error_code ec;
  fs::path build_dir = plan.binary.parent_path();
  if (Status s = make_dirs(build_dir / "obj"); !s) {
    out.error = out.environment_error = s.message();
    return out;
  }

  fs::path bin_cached = cache_dir / "bin" / plan.link.cache_key;
  if (cached_intact(bin_cached, "binary", out.output)) {
    out.ok = true;
    out.steps_cached = static_cast<int>(plan.compiles.size()) + 1;
    out.binary = bin_cached;
    stamp();
    return out;
  }

  // Compile what the cache lacks, in parallel.
  std::vector<ProcessSpec> specs;
  std::vector<size_t> which;
  struct SplitCompile {
    size_t step;
    ProcessSpec spec;
    SandboxOptions sandbox;
  };
  std::vector<SplitCompile> split;
  std::vector<std::pair<std::string, std::string>> object_paths;  // plan output -> cached object
  for (size_t i = 0; i < plan.compiles.size(); ++i) {
    const BuildStep& step = plan.compiles[i];
    fs::path cached = cache_dir / "obj" / (step.cache_key + ".o");
    object_paths.push_back({step.output.string(), cached.string()});
    if (cached_intact(cached, "object", out.output)) {
      ++out.steps_cached;
      continue;
    }
    ProcessSpec spec;
    spec.argv = step.argv;
    spec.work_dir = build_dir;
    spec.timeout_s = limits.timeout_s;
    spec.inactivity_timeout_s = limits.inactivity_timeout_s;
    spec.output_cap = limits.output_cap;
    spec.pause_group = limits.pause_group;
    // The step sees its sources and the toolchain (limits.sandbox) and writes its build dir only.
    SandboxOptions sandbox = limits.sandbox;
    sandbox.writable_paths.push_back(build_dir);
    if (step.nvcc_split) {
      split.push_back({i, std::move(spec), std::move(sandbox)});
      continue;
    }
    specs.push_back(sandboxed(std::move(spec), sandbox));
    which.push_back(i);
  }
  if (!specs.empty() || !split.empty()) {
    std::vector<ProcessResult> results;
    if (!specs.empty()) results = runner.run_all(specs, limits.parallel);
    for (const SplitCompile& c : split) {
      results.push_back(run_nvcc_split(plan.compiles[c.step], c.spec, c.sandbox, runner));
      which.push_back(c.step);
    }
    out.steps_run += static_cast<int>(results.size());
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
      stamp();
      return out;
    }
  }

  // Link from the cached objects, in what is left of the build's time, paused time not counted.
  double left = limits.timeout_s - (elapsed() - paused());
  if (left <= 0) {
    out.timed_out = true;
    out.failed_step = plan.link.label;
    out.error = strprintf("build timed out after %.0f s (build_timeout)", limits.timeout_s);
    stamp();
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
  link.pause_group = limits.pause_group;
  SandboxOptions sandbox = limits.sandbox;
  sandbox.writable_paths.push_back(build_dir);
  for (const auto& [planned, cached] : object_paths) sandbox.read_only_paths.push_back(cached);
  ProcessResult r = runner.run(sandboxed(std::move(link), sandbox));
  ++out.steps_run;
  out.output += step_text(plan.link, r);
  if (!r.success()) {
    out.failed_step = plan.link.label;
    out.timed_out = r.timed_out || r.inactive;
    out.error = plan.link.label + " failed: " + (r.started ? r.describe() : r.start_error);
    if (std::string env = environment_fault(r, true, build_dir); !env.empty())
      out.environment_error = plan.link.label + ": " + env;
    stamp();
    return out;
  }
  if (Status s = publish(plan.binary, bin_cached); !s) {
    out.error = out.environment_error = s.message();
    out.failed_step = plan.link.label;
    stamp();
    return out;
  }
  fs::remove(plan.binary, ec);
  out.ok = true;
  out.binary = bin_cached;
  stamp();
  return out;
}

}  // namespace kf
