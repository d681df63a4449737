// OutputCapture: head + tail of a child's output within a byte cap.
#include "proc/output_capture.h"

#include <algorithm>

namespace kf {

OutputCapture::OutputCapture(size_t cap) : head_cap_(cap / 2), tail_cap_(cap - cap / 2) {}

void OutputCapture::append(const char* data, size_t size) {
  total_ += size;
  size_t to_head = std::min(size, head_cap_ - head_.size());
  head_.append(data, to_head);
  data += to_head;
  size -= to_head;
  if (size == 0 || tail_cap_ == 0) return;
  if (size >= tail_cap_) {
    tail_.assign(data + size - tail_cap_, tail_cap_);
    return;
  }
  tail_.append(data, size);
  if (tail_.size() > 2 * tail_cap_) tail_.erase(0, tail_.size() - tail_cap_);
}

std::string OutputCapture::take() {
  if (tail_.size() > tail_cap_) tail_.erase(0, tail_.size() - tail_cap_);
  uint64_t cut = total_ - head_.size() - tail_.size();
  std::string out = std::move(head_);
  if (cut > 0) out += "\n[... " + std::to_string(cut) + " bytes of output cut ...]\n";
  out += tail_;
  head_.clear();
  tail_.clear();
  return out;
}

}  // namespace kf
