// The machine's CPU pressure (Linux PSI, /proc/pressure/cpu): for how long some runnable task
// waited for a CPU. The share of a span's wall time spent so says whether other processes
// competed with what ran in it.
#pragma once

#include <string>

namespace kf {

// The machine's cumulative CPU stall time ("some" total, microseconds) from a /proc/pressure/cpu
// text; -1 when the text has none.
double cpu_pressure_total_us(const std::string& text);

// The same, read now from /proc/pressure/cpu; -1 where the kernel keeps no pressure accounting
// (before Linux 4.20, or psi=0).
double read_cpu_pressure_total_us();

}  // namespace kf
