// Seeded input values, poison and guard patterns, and the checksum that detects modified inputs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kernelfoundry/harness.h"

namespace kernelfoundry {

// The stream a buffer's values come from: one per (seed, buffer name).
std::uint64_t stream_key(int seed, const std::string& name);

// Writes `count` values of `dtype` drawn from `dist`. Counter-based: element i depends only on
// (key, i), so the result is the same however the work is split across threads (`chunk`
// elements per piece).
void fill_values(void* dst, DType dtype, long count, const Distribution& dist, std::uint64_t key,
                 long chunk = 1L << 20);

// One element's bytes that poison outputs before a call; variants 0 and 1 differ so an output
// that happens to equal one poison cannot pass two calls. Floats get NaNs, integers 0xFF.. and
// 0xDEADBEEF-like values.
std::vector<unsigned char> poison_pattern(DType dtype, int variant);
// How many of `count` elements equal `pattern` (dtype_size(dtype) bytes).
long count_pattern(const void* data, DType dtype, long count, const unsigned char* pattern);

// The bytes written after every buffer; a changed byte is an out-of-bounds write.
constexpr std::size_t kGuardBytes = 4096;
const std::vector<unsigned char>& guard_pattern();

// 64-bit checksum of a byte range; chunks can be chained through `seed`.
std::uint64_t checksum(const void* data, std::size_t bytes, std::uint64_t seed = 0);

// The checksum of a buffer as the harness defines it: `checksum` of each kChecksumChunk-byte
// chunk (computed in parallel), folded in order with checksum_combine. A device buffer summed
// from chunk-sized downloads gives the same value as its host bytes.
constexpr std::size_t kChecksumChunk = std::size_t(8) << 20;
std::uint64_t checksum_combine(std::uint64_t sum, std::uint64_t chunk_sum, std::size_t index);
std::uint64_t checksum_chunked(const void* data, std::size_t bytes);

}  // namespace kernelfoundry
