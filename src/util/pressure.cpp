#include "util/pressure.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace kf {

double cpu_pressure_total_us(const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("some ", 0) != 0) continue;
    std::size_t at = line.find(" total=");
    if (at == std::string::npos) return -1;
    std::string digits = line.substr(at + 7);
    char* end = nullptr;
    errno = 0;
    double total = std::strtod(digits.c_str(), &end);
    if (end == digits.c_str() || *end != '\0' || errno != 0 || !std::isfinite(total) || total < 0)
      return -1;
    return total;
  }
  return -1;
}

double read_cpu_pressure_total_us() {
  std::ifstream in("/proc/pressure/cpu");
  std::stringstream text;
  text << in.rdbuf();
  return cpu_pressure_total_us(text.str());
}

}  // namespace kf
