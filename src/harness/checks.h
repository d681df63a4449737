// Integrity checks on buffers: guard bytes, input checksums, host copies of outputs.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernelfoundry/harness.h"

namespace kernelfoundry {

// Checksum of the buffer's valid bytes as they are on the device now.
std::uint64_t buffer_checksum(const Buffer& buffer);
// False (with "N bytes changed, first at +K past the end") when the guard was overwritten.
bool guard_intact(const Buffer& buffer, std::string* detail);
// Rewrites the guard pattern (after a detected overwrite).
void restore_guard(Buffer& buffer);
// The buffer's valid bytes, copied to the host.
std::vector<unsigned char> to_host(const Buffer& buffer);

}  // namespace kernelfoundry
