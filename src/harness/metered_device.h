// A Device that forwards to another and adds up the wall time of each kind of operation, so the
// harness's result can say where a candidate's seconds went (phase_seconds "device.*").
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness/device.h"

namespace kernelfoundry {

struct DeviceTimes {
  double alloc = 0, release = 0, upload = 0, download = 0, copy = 0, fill = 0, sync = 0, flush = 0;
  // (phase name, seconds) for the result's phase_seconds.
  std::vector<std::pair<std::string, double>> phases() const;
};

// Wraps `inner` (not owned): every call goes through unchanged.
std::unique_ptr<Device> make_metered_device(Device* inner, DeviceTimes* times);

// Seconds spent drawing seeded values on the host (fill_values), over the process.
double host_fill_seconds();

}  // namespace kernelfoundry
