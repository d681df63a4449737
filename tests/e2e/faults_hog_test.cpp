// End-to-end tests of issue 9 (hog): the reduction_cpp reference's own code evaluated as a
// candidate reads near 1.00x with its interval, while CPU hogs run and on an idle machine, and a
// busy machine is said with the result (flag machine_busy). Run serially (ctest RUN_SERIAL):
// another test beside them would be a second hog.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <thread>

#include "arch/host_bandwidth.h"
#include "e2e/cli_helpers.h"

namespace kf::e2e {
namespace {

// Busy child processes (one core each) for as long as the object lives.
class Hogs {
 public:
  explicit Hogs(int n) {
    for (int i = 0; i < n; ++i) {
      pid_t pid = ::fork();
      if (pid == 0) {
        volatile unsigned long x = 0;
        for (;;) x = x + 1;
      }
      if (pid > 0) pids_.push_back(pid);
    }
  }
  ~Hogs() {
    for (pid_t pid : pids_) ::kill(pid, SIGKILL);
    for (pid_t pid : pids_) ::waitpid(pid, nullptr, 0);
  }
  std::size_t size() const { return pids_.size(); }

 private:
  std::vector<pid_t> pids_;
};

// The bench's candidate: the reference's row_sums as the EVOLVE block.
std::filesystem::path reference_as_candidate() {
  return source_dir() / "bench" / "candidates" / "reduction_cpp_reference_as_candidate.cpp";
}

bool has_flag(const nlohmann::json& kernel, const std::string& name, std::string* detail) {
  for (const auto& f : kernel.value("flags", nlohmann::json::array())) {
    if (f.value("flag", "") == name) {
      if (detail != nullptr) *detail = f.value("detail", "");
      return true;
    }
  }
  return false;
}

// The job's one kernel, which must have passed (verdict 5); null, with the failure said, when the
// job failed, wrote no results.json, evaluated another number of kernels or this one failed.
const nlohmann::json* one_correct_kernel(const JobOutcome& job) {
  if (job.cli.exit_code != 0 || !job.results.is_object()) {
    ADD_FAILURE() << "exit " << job.cli.exit_code << "\n" << job.cli.output;
    return nullptr;
  }
  if (job.results["kernels"].size() != 1) {
    ADD_FAILURE() << job.results["kernels"].size() << " kernels, not 1\n" << job.cli.output;
    return nullptr;
  }
  const nlohmann::json& k = job.results["kernels"][0];
  if (k.value("verdict", 0) != 5) {
    ADD_FAILURE() << "verdict " << k.value("verdict", 0) << ": " << k.value("reason", "");
    return nullptr;
  }
  return &k;
}

// The pairs' ratios (reference / candidate, probe left out) on the shape with the shortest
// calls, where the work before a call matters most: their geometric mean and a ~95% interval of
// it (Student's t over the pairs' log ratios); n is 0 when the shape has fewer than three pairs.
struct ShapeRatio {
  double ratio = 0, lo = 0, hi = 0;
  int n = 0;
  std::string dump() const {
    return std::to_string(ratio) + " [" + std::to_string(lo) + ", " + std::to_string(hi) +
           "] over " + std::to_string(n) + " pairs";
  }
};

ShapeRatio shortest_shape_ratio(const nlohmann::json& kernel) {
  const nlohmann::json* shortest = nullptr;
  double shortest_ms = 0;
  for (const auto& [shape, t] : kernel["runtimes"].items()) {
    double ms = t.value("median_ms", 0.0);
    if (shortest == nullptr || ms < shortest_ms) {
      shortest = &t;
      shortest_ms = ms;
    }
  }
  ShapeRatio r;
  if (shortest == nullptr || !shortest->contains("pairs")) return r;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  std::vector<double> logs;
  for (const auto& p : (*shortest)["pairs"]) {
    if (p.value("probe", false)) continue;
    logs.push_back(std::log(median(p["reference_ms"].get<std::vector<double>>()) /
                            median(p["candidate_ms"].get<std::vector<double>>())));
  }
  if (logs.size() < 3) return r;
  double mean = 0;
  for (double l : logs) mean += l;
  mean /= double(logs.size());
  double var = 0;
  for (double l : logs) var += (l - mean) * (l - mean);
  var /= double(logs.size() - 1);
  // Student's t at 97.5% for 2..20 degrees of freedom; 2.09 beyond (a little wider than exact).
  static const double t[] = {4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201,
                             2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086};
  std::size_t df = logs.size() - 1;
  double q = df - 2 < std::size(t) ? t[df - 2] : 2.09;
  double half = q * std::sqrt(var / double(logs.size()));
  r.n = int(logs.size());
  r.ratio = std::exp(mean);
  r.lo = std::exp(mean - half);
  r.hi = std::exp(mean + half);
  return r;
}

}  // namespace

// The same code on both sides of the side-by-side pairs reads 1.00x, first on an idle machine,
// then with one CPU hog running for the whole job.
//
// Idle, on the shortest shape (~0.15 ms a call), where the work before a call matters most: the
// judge times the reference's batches while it holds every benchmark shape's cases and the
// reference's outputs, so a cold call that evicted all of a process's buffers (not only its own)
// made the judge's calls read 18-29% slower there than a candidate child's, and the reference's
// own code 1.06-1.10x over all (0 of 5 intervals holding 1.00, 2-core VM). The idle job also
// measures the host's copy bandwidth (kept in the cache for the second job): timed by the wall
// clock under the hog it read low enough that honest calls beat twice it and were flagged
// faster_than_roofline (it is timed by the copy threads' CPU time now, arch/host_bandwidth.h).
//
// Under the hog, default timing (cold samples, 2 s per shape): issue 9's target is +-2%; measured
// by bench/self_speedup.py it is met in 9 of 10 runs (bench/README.md), so this test holds the
// ratio to +-15% unless its interval holds 1.00; the timing before side-by-side pairs failed that
// by far (0.31x and 1.50x for this same code, 0.57x [0.37-0.87] in the first paired version).
TEST(FaultsHog, ReferenceAgainstItselfReadsOneIdleAndNearOneUnderAHog) {
  Scratch s;
  // Within 10%, or (where this machine's other work made one run unable to tell) an interval
  // holding 1.00; the eviction bias this guards against read 18-29% off over ~15 tight pairs,
  // which fails both. A second idle job is run only when the first fails both: a bias repeats
  // in every job, while on a VM whose neighbours move a plain loop's time by +-25% (2026-12-07:
  // 0.84 [0.77-0.92] over 9 pairs once) one job's 9 pairs can exclude 1.00 by chance.
  std::string idle_detail;
  bool idle_ok = false;
  for (int attempt = 1; attempt <= 2 && !idle_ok; ++attempt) {
    std::string name = "idle_self" + std::to_string(attempt);
    JobOutcome idle = s.run_job(
        name,
        {"eval", "task=" + example("reduction_cpp").string(), "job_name=" + name,
         "eval_config.time_budget=1", "eval_config.num_seeds=1", reference_as_candidate().string()},
        240);
    const nlohmann::json* ik_ptr = one_correct_kernel(idle);
    ASSERT_NE(ik_ptr, nullptr);
    const nlohmann::json& ik = *ik_ptr;
    ShapeRatio shortest = shortest_shape_ratio(ik);
    ASSERT_GT(shortest.n, 0) << ik["runtimes"].dump();
    bool near_one = shortest.ratio > 0.9 && shortest.ratio < 1.1;
    bool holds_one = shortest.lo <= 1.0 && shortest.hi >= 1.0;
    idle_ok = near_one || holds_one;
    idle_detail += "job " + std::to_string(attempt) + ": " + shortest.dump() + "\n" +
                   ik["runtimes"].dump() + "\n";
  }
  EXPECT_TRUE(idle_ok) << idle_detail;

  std::vector<std::string> args = {"eval",
                                   "task=" + example("reduction_cpp").string(),
                                   "job_name=hog_self",
                                   "eval_config.time_budget=2",
                                   "eval_config.min_samples=10",
                                   "eval_config.noise_target=0.005",
                                   "eval_config.num_seeds=1",
                                   reference_as_candidate().string()};
  Hogs hogs(1);
  ASSERT_EQ(hogs.size(), 1u);
  JobOutcome job = s.run_job("hog_self", args, 240);
  const nlohmann::json* k_ptr = one_correct_kernel(job);
  ASSERT_NE(k_ptr, nullptr);
  const nlohmann::json& k = *k_ptr;
  // Measured side by side, with its interval reported.
  ASSERT_TRUE(k.contains("speedup_interval") && k["speedup_interval"].is_object()) << k.dump();
  const nlohmann::json& iv = k["speedup_interval"];
  double speedup = k.value("speedup", 0.0);
  EXPECT_DOUBLE_EQ(iv.value("speedup", 0.0), speedup);
  EXPECT_GE(iv.value("batches", 0), 9) << "three shapes, three pairs each at least";
  EXPECT_GT(iv.value("lo", 0.0), 0.0);
  EXPECT_LE(iv.value("lo", 0.0), speedup);
  ASSERT_TRUE(iv["hi"].is_number()) << iv.dump();
  EXPECT_GE(iv["hi"].get<double>(), speedup);
  // Near 1.00x, or, where the machine's load made that impossible to tell, an interval that says
  // so by holding 1.00 (the search then calls it neither faster nor slower).
  bool near = speedup >= 0.85 && speedup <= 1.15;
  bool holds = iv.value("lo", 0.0) <= 1.0 && iv["hi"].get<double>() >= 1.0;
  EXPECT_TRUE(near || holds) << iv.dump() << "\n" << k["runtimes"].dump();
  EXPECT_CONTAINS(job.cli.output, "x [");  // the progress line shows the interval
}

// As many hogs as cores: whenever the timed calls run, some task waits for a CPU, and the result
// says so (informative, not suspect: the candidate did nothing wrong).
TEST(FaultsHog, BusyMachineIsSaidWithTheSpeedup) {
  if (file_text("/proc/pressure/cpu").empty())
    GTEST_SKIP() << "this kernel keeps no CPU pressure accounting (/proc/pressure/cpu)";
  Scratch s;
  std::vector<std::string> args = {"eval", "task=" + example("reduction_cpp").string(),
                                   "job_name=hog_busy"};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  args.push_back(reference_as_candidate().string());
  Hogs hogs(int(std::max(2u, std::thread::hardware_concurrency())));
  JobOutcome job = s.run_job("hog_busy", args, 240);
  const nlohmann::json* k_ptr = one_correct_kernel(job);
  ASSERT_NE(k_ptr, nullptr);
  const nlohmann::json& k = *k_ptr;
  ASSERT_TRUE(k.contains("speedup_interval")) << k.dump();
  std::string detail;
  ASSERT_TRUE(has_flag(k, "machine_busy", &detail)) << k.dump();
  EXPECT_CONTAINS(detail, "waited for a CPU");
  EXPECT_CONTAINS(detail, "/proc/pressure/cpu");
  for (const auto& f : k["flags"]) {
    if (f.value("flag", "") == "machine_busy") {
      EXPECT_FALSE(f.value("suspect", true));
    }
  }
}

// Under as many hogs as cores, a candidate called faster by a busy run is measured again, and the
// second run is its result: softmax_ocl's vectorised kernel (clearly faster than the reference on
// PoCL) must carry the confirmation; the reference's own code must not stand as faster on one
// busy run either.
TEST(FaultsHog, AFasterResultOnABusyMachineIsMeasuredTwice) {
  if (file_text("/proc/pressure/cpu").empty())
    GTEST_SKIP() << "this kernel keeps no CPU pressure accounting (/proc/pressure/cpu)";
  Scratch s;
  std::vector<std::string> args = {"eval", "task=" + example("softmax_ocl").string(),
                                   "job_name=hog_confirm"};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  args.push_back(candidate("softmax_ocl", "faster.cl").string());
  args.push_back(candidate("softmax_ocl", "correct.cl").string());
  Hogs hogs(int(std::max(2u, std::thread::hardware_concurrency())));
  JobOutcome job = s.run_job("hog_confirm", args, 300);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_TRUE(job.results.is_object()) << job.cli.output;
  ASSERT_EQ(job.results["kernels"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const nlohmann::json& k = job.results["kernels"][i];
    ASSERT_EQ(k.value("verdict", 0), 5) << k.value("reason", "");
    ASSERT_TRUE(k.contains("speedup_interval")) << k.dump();
    std::string first;
    bool again = has_flag(k, "confirmed_on_busy_machine", &first);
    if (i == 0) {
      EXPECT_TRUE(again) << "the vectorised kernel read faster on a busy machine: " << k.dump();
    }
    if (again) {
      EXPECT_CONTAINS(first, "the first side-by-side measurement read ");
      for (const KernelRecord& r : job.kernels) {
        if (r.uuid == k.value("uuid", "")) {
          // In the log's integrity section, with the first run's figure.
          EXPECT_CONTAINS(r.eval_log, "\n- confirmed_on_busy_machine: the first side-by-side");
        }
      }
    }
    // A busy run's faster interval never stands alone.
    if (has_flag(k, "machine_busy", nullptr) && k["speedup_interval"].value("lo", 0.0) > 1) {
      EXPECT_TRUE(again) << k.dump();
    }
    std::cout << k.value("label", "") << ": " << k.value("speedup", 0.0) << "x"
              << (again ? " (" + first + ")" : std::string()) << "\n";
  }
}

}  // namespace kf::e2e

namespace kf::e2e {

// A result flagged by the timing checks is measured again, and that second measurement is side
// by side too: alone, against the reference's timing at job start, a busy machine's drift was the
// figure (0.90x and 1.09x for the reference's own code under one CPU hog, where the paired runs
// read within 2%). The host bandwidth is set far below the machine's (2 GB/s in the cache), so
// the candidate's honest first measurement beats the roofline bound; in the re-measurement
// (harness phase "benchmark") it sleeps each call below the bound, and is that run's result.
TEST(FaultsHog, FlaggedResultIsRemeasuredSideBySide) {
  Scratch s;
  nlohmann::json cache = {
      {"format", "kernelfoundry-host-bandwidth"},
      {"version", 1},
      {"machines", {{host_machine_key(), {{"copy_gbps", 2.0}, {"bytes", 64 << 20}}}}}};
  std::filesystem::create_directories(s.dir() / "cache");
  {
    std::ofstream out(s.dir() / "cache" / "host_bandwidth.json");
    out << cache.dump(2) << "\n";
  }
  JobOutcome job = s.run_job(
      "remeasure",
      {"eval", "task=" + example("reduction_cpp").string(), "job_name=remeasure",
       "eval_config.num_seeds=1", candidate("reduction_cpp", "slow_when_remeasured.cpp").string()},
      240);
  const nlohmann::json* k_ptr = one_correct_kernel(job);
  ASSERT_NE(k_ptr, nullptr);
  const nlohmann::json& k = *k_ptr;
  std::string detail;
  ASSERT_TRUE(has_flag(k, "remeasured", &detail)) << k.dump();
  EXPECT_CONTAINS(detail, "the first measurement was flagged");
  EXPECT_FALSE(has_flag(k, "faster_than_roofline", nullptr)) << k.dump();
  for (const auto& f : k["flags"]) EXPECT_FALSE(f.value("suspect", true)) << f.dump();
  // The re-measurement's figure, side by side: each call slept far longer than the work takes.
  ASSERT_TRUE(k.contains("speedup_interval") && k["speedup_interval"].is_object()) << k.dump();
  EXPECT_DOUBLE_EQ(k["speedup_interval"].value("speedup", 0.0), k.value("speedup", 0.0));
  EXPECT_LT(k.value("speedup", 1.0), 0.5) << k["speedup_interval"].dump();
  EXPECT_GE(k["speedup_interval"].value("batches", 0), 9) << "three shapes, three pairs each";
  for (const auto& [shape, t] : k["runtimes"].items())
    EXPECT_TRUE(t.contains("pairs") && !t["pairs"].empty()) << shape << ": " << t.dump();
}

}  // namespace kf::e2e
