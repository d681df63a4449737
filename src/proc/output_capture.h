// OutputCapture: keeps the head and tail of a child's output within a byte cap (internal to proc).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace kf {

// Compiler errors sit at the start, crash reports at the end: both ends are worth keeping, the
// middle of a 10 MB log is not.
class OutputCapture {
 public:
  explicit OutputCapture(size_t cap);
  void append(const char* data, size_t size);
  uint64_t total_bytes() const { return total_; }
  // The kept text: everything when it fit, else head + a note of the cut + tail.
  std::string take();

 private:
  size_t head_cap_;
  size_t tail_cap_;
  std::string head_;
  std::string tail_;  // may grow to 2 * tail_cap_ before it is trimmed (amortised)
  uint64_t total_ = 0;
};

}  // namespace kf
