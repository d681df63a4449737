// perf stat's control protocol: "enable\n" / "disable\n" written to the control FIFO, each
// answered with "ack\n" on the acknowledgement FIFO.
#include "harness/perf_window.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kernelfoundry {

PerfWindow::PerfWindow(const std::string& control) {
  if (control.empty()) return;
  std::size_t comma = control.find(',');
  if (comma == std::string::npos) {
    problem_ = "--perf-control '" + control + "' is not CTL,ACK";
    return;
  }
  // perf holds both FIFOs open from before this process started, so neither open blocks.
  ctl_ = ::open(control.substr(0, comma).c_str(), O_WRONLY | O_CLOEXEC);
  ack_ = ::open(control.substr(comma + 1).c_str(), O_RDONLY | O_CLOEXEC);
  if (ctl_ < 0 || ack_ < 0) {
    problem_ = "cannot open perf's control FIFOs '" + control + "': " + std::strerror(errno);
    return;
  }
  enabled_ = send("enable\n");
}

PerfWindow::~PerfWindow() {
  if (enabled_) send("disable\n");
  if (ctl_ >= 0) ::close(ctl_);
  if (ack_ >= 0) ::close(ack_);
}

bool PerfWindow::send(const char* command) {
  std::size_t length = std::strlen(command);
  if (::write(ctl_, command, length) != static_cast<ssize_t>(length)) {
    problem_ = std::string("perf's control FIFO took no command: ") + std::strerror(errno);
    return false;
  }
  // "ack\n", read a byte at a time so nothing past it is taken.
  std::string answer;
  char c = 0;
  while (answer.size() < 16) {
    ssize_t n = ::read(ack_, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    if (c == '\n') break;
    answer += c;
  }
  if (answer != "ack") {
    problem_ = "perf did not acknowledge '" + std::string(command, length - 1) + "'";
    return false;
  }
  return true;
}

}  // namespace kernelfoundry
