// Guard-byte checks, chunked checksums and host copies of buffers.
#include "harness/checks.h"

#include <algorithm>
#include <cstring>

#include "harness/case_state.h"
#include "harness/fill.h"

namespace kernelfoundry {

std::uint64_t buffer_checksum(const Buffer& buffer, std::vector<unsigned char>* staging) {
  Device& device = BufferAccess::device(buffer);
  std::size_t bytes = BufferAccess::capacity_bytes(buffer);
  if (const void* host = device.host_view(buffer.handle())) return checksum_chunked(host, bytes);
  staging->resize(bytes);
  if (bytes > 0) device.download(buffer.handle(), 0, staging->data(), bytes);
  return checksum_chunked(staging->data(), bytes);
}

bool guard_intact(const Buffer& buffer, std::string* detail) {
  Device& device = BufferAccess::device(buffer);
  // Memory that ends at a guard page has no pattern: an overrun would have crashed.
  if (device.page_guarded(buffer.handle())) return true;
  std::size_t offset = BufferAccess::capacity_bytes(buffer);
  const std::vector<unsigned char>& want = guard_pattern();
  std::vector<unsigned char> got(want.size());
  device.download(buffer.handle(), offset, got.data(), got.size());
  if (std::memcmp(got.data(), want.data(), want.size()) == 0) return true;
  std::size_t changed = 0, first = want.size();
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (got[i] != want[i]) {
      ++changed;
      first = std::min(first, i);
    }
  }
  std::size_t elem = dtype_size(buffer.dtype());
  *detail = std::to_string(changed) + " guard byte(s) changed, the first at byte " +
            std::to_string(first) + " past the end (element index " +
            std::to_string(buffer.capacity() + long(first / elem)) + " of a " +
            std::to_string(buffer.capacity()) + "-element buffer)";
  return false;
}

void restore_guard(Buffer& buffer) {
  if (BufferAccess::device(buffer).page_guarded(buffer.handle())) return;
  const std::vector<unsigned char>& g = guard_pattern();
  BufferAccess::device(buffer).upload(buffer.handle(), BufferAccess::capacity_bytes(buffer),
                                      g.data(), g.size());
}

void to_host(const Buffer& buffer, std::vector<unsigned char>* out) {
  out->resize(buffer.bytes());
  if (!out->empty())
    BufferAccess::device(buffer).download(buffer.handle(), 0, out->data(), out->size());
}

}  // namespace kernelfoundry
