// The host CPU's memory bandwidth, for the roofline bound on CPU archs (whose profiles have no
// datasheet figure): a short copy test, measured once per machine and cached in a JSON file.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "arch/arch.h"
#include "util/status.h"

namespace kf {

// The bound set on a host profile is this many times the measured copy bandwidth: a kernel that
// only reads (a reduction) or uses non-temporal stores moves more bytes per second than a copy
// that also pays for write-allocate, and may use more threads than the test. A memo or a kernel
// that skips its work beats the bound by far more.
constexpr double kHostRooflineHeadroom = 2.0;

// The file under the cache dir holding measurements by machine key.
constexpr const char* kHostBandwidthFile = "host_bandwidth.json";

// What a measurement holds for: "<hostname>|<CPU model from /proc/cpuinfo>|<hardware threads>".
std::string host_machine_key();

// GB/s of a 64 MiB memcpy split over the hardware threads (at most 32), counting the bytes read
// and written; the best of 3 copies after one to place the pages. About 0.1-0.3 s.
double measure_copy_bandwidth_gbps();

// Returns GB/s; <= 0 when the measurement failed.
using BandwidthMeasurer = std::function<double()>;
// The machine's cumulative CPU stall time in microseconds (read_cpu_pressure_total_us, the
// default); < 0 when unknown.
using StallClock = std::function<double()>;

// A measurement during which some task waited for a CPU this share of the time or more was taken
// on a busy machine: the copy's threads shared cores, and it reads low (12.6 GB/s under one CPU
// hog against 24.5 idle on the 2-core VM), low enough that honest kernels beat twice it and are
// flagged faster_than_roofline. It is used for that job and not cached.
constexpr double kBusyMeasurementPressure = 0.10;

struct HostBandwidth {
  double copy_gbps = 0;
  bool from_cache = false;  // false: measured by this call
  std::string key;
  std::filesystem::path cache_file;
  std::string cache_warning;  // non-empty: the result was not cached (it still holds)
  double busy_share = -1;     // measured now: the share of its time some task waited for a CPU
};

// The copy bandwidth of the machine `key` names: read from <cache_dir>/host_bandwidth.json, or
// measured with `measure` and written there when the file has no usable entry for `key` (another
// machine, an unknown format version, a value that is not a positive number). An error only
// when the measurement fails. A measurement on a busy machine (kBusyMeasurementPressure, read
// with `stall` around it) is returned, not cached, and says so in cache_warning.
Result<HostBandwidth> host_copy_bandwidth(const std::filesystem::path& cache_dir,
                                          const std::string& key, const BandwidthMeasurer& measure,
                                          const StallClock& stall = {});
// This machine, measured with measure_copy_bandwidth_gbps().
Result<HostBandwidth> host_copy_bandwidth(const std::filesystem::path& cache_dir);

// For a host CPU profile (find_arch("cpu") or "native", vendor "host"/"local") whose dram_gbps is
// 0: sets dram_gbps to kHostRooflineHeadroom x the host copy bandwidth and says so in the
// description. Call it only when the device that runs the kernels is the host CPU (CPP tasks;
// OpenCL only on a CPU device such as PoCL). Returns a line for the job's log, "" when the
// profile was left as it was. `measure` defaults to measure_copy_bandwidth_gbps.
Result<std::string> apply_host_bandwidth(ArchProfile& arch, const std::filesystem::path& cache_dir,
                                         const BandwidthMeasurer& measure = {},
                                         const StallClock& stall = {});

}  // namespace kf
