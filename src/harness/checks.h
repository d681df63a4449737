// Integrity checks on buffers: guard bytes, input checksums, host copies of outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernelfoundry/harness.h"

namespace kernelfoundry {

// Checksum of the buffer's bytes as they are on the device now (checksum_chunked). Device memory
// is downloaded into `staging`, which keeps its capacity for the next call.
std::uint64_t buffer_checksum(const Buffer& buffer, std::vector<unsigned char>* staging);
// False (with "N bytes changed, first at +K past the end") when the guard was overwritten.
bool guard_intact(const Buffer& buffer, std::string* detail);
// Rewrites the guard pattern (after a detected overwrite).
void restore_guard(Buffer& buffer);
// The buffer's valid bytes, copied into `out` (resized; its capacity is reused, so large outputs
// do not fault in fresh pages on every call).
void to_host(const Buffer& buffer, std::vector<unsigned char>* out);

}  // namespace kernelfoundry
