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
// and written; the best of 3 copies after one to place the pages. A copy's time is its slowest
// thread's CPU time (at least half the wall time), so a copy thread that waited for a CPU held by
// another process does not read as slow memory: by the wall clock one CPU hog on the 2-core VM
// took 24.5 GB/s down to 12.6, low enough that honest kernels beat twice it; by CPU time the
// same hog reads 30-38 GB/s against 24-29 idle (a thread that ran alone had the memory to
// itself). About 0.1-0.3 s.
double measure_copy_bandwidth_gbps();

// Returns GB/s; <= 0 when the measurement failed.
using BandwidthMeasurer = std::function<double()>;
// The machine's cumulative CPU stall time in microseconds (read_cpu_pressure_total_us, the
// default); < 0 when unknown.
using StallClock = std::function<double()>;

// A measurement during which some task waited for a CPU this share of the time or more was taken
// on a busy machine: the copy's threads shared cores and the memory, so it is not the idle
// machine's figure (by CPU time it reads up to ~1.4x high; measured by another measurer it may
// read low). It is used for that job and not cached.
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
