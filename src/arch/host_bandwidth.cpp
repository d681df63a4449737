// Host copy bandwidth: a threaded memcpy test and its per-machine cache
// (<cache_dir>/host_bandwidth.json, versioned, keyed by machine).
#include "arch/host_bandwidth.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/pressure.h"
#include "util/strings.h"

namespace kf {
namespace {

constexpr const char* kFormat = "kernelfoundry-host-bandwidth";
constexpr int kVersion = 1;
constexpr std::size_t kCopyBytes = std::size_t(64) << 20;
constexpr int kTimedCopies = 3;
constexpr unsigned kMaxThreads = 32;

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    // x86 says "model name"; some ARM kernels only "Hardware" or "CPU part".
    for (const char* field : {"model name", "Hardware", "CPU part"}) {
      if (line.rfind(field, 0) != 0) continue;
      std::size_t colon = line.find(':');
      if (colon != std::string::npos) return trim(line.substr(colon + 1));
    }
  }
  return "unknown CPU";
}

std::string now_utc() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

double thread_cpu_seconds() {
  timespec t{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return 0;
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// Each thread copies (or first fills) its own slice, so the pages sit near the thread that uses
// them, as in a kernel that splits its work the same way. Returns the slowest thread's CPU time.
double run_threads(unsigned threads, char* dst, const char* src, bool fill) {
  std::vector<std::thread> pool;
  std::vector<double> cpu_s(threads, 0.0);
  std::size_t slice = (kCopyBytes / threads + 63) / 64 * 64;
  for (unsigned t = 0; t < threads; ++t) {
    std::size_t begin = std::min(kCopyBytes, t * slice);
    std::size_t end = std::min(kCopyBytes, begin + slice);
    double* cpu = &cpu_s[t];
    pool.emplace_back([=] {
      double start = thread_cpu_seconds();
      if (fill) {
        std::memset(dst + begin, 1, end - begin);
        std::memset(const_cast<char*>(src) + begin, 2, end - begin);
      } else {
        std::memcpy(dst + begin, src + begin, end - begin);
      }
      *cpu = thread_cpu_seconds() - start;
    });
  }
  for (std::thread& th : pool) th.join();
  return *std::max_element(cpu_s.begin(), cpu_s.end());
}

// The cache file's entry for `key`, or 0 when there is none worth using.
double cached_gbps(const nlohmann::json& cache, const std::string& key) {
  if (!cache.is_object() || cache.value("format", "") != kFormat ||
      cache.value("version", 0) != kVersion)
    return 0;
  auto machines = cache.find("machines");
  if (machines == cache.end() || !machines->is_object()) return 0;
  auto entry = machines->find(key);
  if (entry == machines->end() || !entry->is_object()) return 0;
  auto gbps = entry->find("copy_gbps");
  if (gbps == entry->end() || !gbps->is_number()) return 0;
  double v = gbps->get<double>();
  // Positive and below any memory system that exists; anything else is re-measured.
  return std::isfinite(v) && v > 0 && v < 1e5 ? v : 0;
}

}  // namespace

std::string host_machine_key() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) std::strcpy(host, "unknown-host");
  return std::string(host) + "|" + cpu_model() + "|" +
         std::to_string(std::thread::hardware_concurrency());
}

double measure_copy_bandwidth_gbps() {
  unsigned threads = std::clamp(std::thread::hardware_concurrency(), 1u, kMaxThreads);
  std::unique_ptr<char[]> src(new (std::nothrow) char[kCopyBytes]);
  std::unique_ptr<char[]> dst(new (std::nothrow) char[kCopyBytes]);
  if (!src || !dst) return 0;
  run_threads(threads, dst.get(), src.get(), /*fill=*/true);
  double best_s = 0;
  for (int i = 0; i < kTimedCopies; ++i) {
    auto start = std::chrono::steady_clock::now();
    double cpu_s = run_threads(threads, dst.get(), src.get(), /*fill=*/false);
    double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // The slowest thread's CPU time, not the wall clock: time a copy thread spent waiting for a
    // CPU that another process held is not the memory's. At least half the wall time, so a CPU
    // clock that under-counts cannot more than double the figure.
    double s = std::max(cpu_s, wall_s / 2);
    if (s > 0 && (best_s == 0 || s < best_s)) best_s = s;
  }
  // Keeps the copies from being optimised away.
  volatile char sink = dst[kCopyBytes / 2];
  (void)sink;
  return best_s > 0 ? 2.0 * double(kCopyBytes) / best_s / 1e9 : 0;
}

Result<HostBandwidth> host_copy_bandwidth(const fs::path& cache_dir, const std::string& key,
                                          const BandwidthMeasurer& measure,
                                          const StallClock& stall) {
  HostBandwidth out;
  out.key = key;
  out.cache_file = cache_dir / kHostBandwidthFile;
  nlohmann::json cache;
  if (auto text = read_file(out.cache_file); text)
    cache = nlohmann::json::parse(*text, nullptr, /*allow_exceptions=*/false);
  if (double gbps = cached_gbps(cache, key); gbps > 0) {
    out.copy_gbps = gbps;
    out.from_cache = true;
    return out;
  }

  const StallClock& stalled = stall ? stall : StallClock(read_cpu_pressure_total_us);
  double stall_before = stalled();
  auto started = std::chrono::steady_clock::now();
  double gbps = measure ? measure() : 0;
  double wall_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
  double stall_after = stalled();
  if (stall_before >= 0 && stall_after >= stall_before)
    out.busy_share = std::min(1.0, (stall_after - stall_before) / std::max(wall_us, 1.0));
  if (!(gbps > 0) || !std::isfinite(gbps))
    return Result<HostBandwidth>::error(
        "could not measure the host's memory bandwidth (the 64 MiB copy test failed, likely out "
        "of memory); the CPU roofline check is off for this job");
  out.copy_gbps = gbps;
  if (out.busy_share >= kBusyMeasurementPressure) {
    out.cache_warning = strprintf(
        "the host bandwidth was measured while other processes competed for the CPU (some task "
        "waited %.0f%% of the time, /proc/pressure/cpu): it is not the idle machine's figure; "
        "used for this job only, not cached (measured again next job)",
        100 * out.busy_share);
    return out;
  }

  // Other machines' entries are kept (a cache dir shared over a network file system).
  if (!cache.is_object() || cache.value("format", "") != kFormat ||
      cache.value("version", 0) != kVersion || !cache.contains("machines") ||
      !cache["machines"].is_object())
    cache = {{"format", kFormat}, {"version", kVersion}, {"machines", nlohmann::json::object()}};
  cache["machines"][key] = {{"copy_gbps", gbps}, {"bytes", kCopyBytes}, {"measured_at", now_utc()}};
  Status made = make_dirs(cache_dir);
  Status written = made ? write_file(out.cache_file, cache.dump(2) + "\n") : made;
  if (!written)
    out.cache_warning =
        "the host bandwidth was measured but not cached (it is measured again "
        "next job): " +
        written.message();
  return out;
}

Result<HostBandwidth> host_copy_bandwidth(const fs::path& cache_dir) {
  return host_copy_bandwidth(cache_dir, host_machine_key(), measure_copy_bandwidth_gbps);
}

Result<std::string> apply_host_bandwidth(ArchProfile& arch, const fs::path& cache_dir,
                                         const BandwidthMeasurer& measure,
                                         const StallClock& stall) {
  bool host = arch.vendor == "host" || arch.vendor == "local";
  if (!host || arch.dram_gbps > 0) return std::string();
  auto bw = host_copy_bandwidth(cache_dir, host_machine_key(),
                                measure ? measure : BandwidthMeasurer(measure_copy_bandwidth_gbps),
                                stall);
  if (!bw) return bw.status();
  arch.dram_gbps = kHostRooflineHeadroom * bw->copy_gbps;
  arch.description += strprintf(" (memory copy measured at %.1f GB/s)", bw->copy_gbps);
  std::string line = strprintf(
      "host memory: copy bandwidth %.1f GB/s (%s); kernels faster than %.0f GB/s of traffic "
      "are flagged faster_than_roofline",
      bw->copy_gbps,
      (bw->from_cache              ? "cached in " + bw->cache_file.string()
       : bw->cache_warning.empty() ? "measured now, saved to " + bw->cache_file.string()
                                   : std::string("measured now"))
          .c_str(),
      arch.dram_gbps);
  if (!bw->cache_warning.empty()) line += "\n" + bw->cache_warning;
  return line;
}

}  // namespace kf
