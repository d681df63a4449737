// Guard-byte checks, chunked checksums and host copies of buffers.
#include "harness/checks.h"

#include <algorithm>
#include <cstring>

#include "harness/case_state.h"
#include "harness/fill.h"

namespace kernelfoundry {

std::uint64_t buffer_checksum(const Buffer& buffer) {
  Device& device = BufferAccess::device(buffer);
  std::size_t bytes = BufferAccess::capacity_bytes(buffer);
  if (const void* host = device.host_view(buffer.handle())) return checksum_chunked(host, bytes);
  // Downloaded a chunk at a time, so a large input needs no second full-size host copy; the
  // chaining matches checksum_chunked over the host values.
  constexpr std::size_t kChunk = kChecksumChunk;
  std::vector<unsigned char> chunk(std::min(bytes, kChunk));
  std::uint64_t sum = 0;
  for (std::size_t off = 0; off < bytes; off += kChunk) {
    std::size_t n = std::min(kChunk, bytes - off);
    device.download(buffer.handle(), off, chunk.data(), n);
    sum = checksum(chunk.data(), n, sum);
  }
  return bytes == 0 ? checksum(nullptr, 0) : sum;
}

bool guard_intact(const Buffer& buffer, std::string* detail) {
  Device& device = BufferAccess::device(buffer);
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
  const std::vector<unsigned char>& g = guard_pattern();
  BufferAccess::device(buffer).upload(buffer.handle(), BufferAccess::capacity_bytes(buffer),
                                      g.data(), g.size());
}

std::vector<unsigned char> to_host(const Buffer& buffer) {
  std::vector<unsigned char> out(buffer.bytes());
  BufferAccess::device(buffer).download(buffer.handle(), 0, out.data(), out.size());
  return out;
}

}  // namespace kernelfoundry
