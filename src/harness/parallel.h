// Splits host-side work of the harness (filling, checksumming, comparing large buffers) over a
// few threads. Work goes in fixed-size chunks, so results never depend on the thread count.
#pragma once

#include <functional>

namespace kernelfoundry {

// Threads the harness uses for host work: the hardware's, at most 16.
unsigned host_threads();

// Calls body(chunk_index, begin, end) for consecutive chunks of [0, n) of `chunk` elements
// (the last may be shorter), on up to host_threads() threads; serially when n fits one chunk.
// Bodies must not throw.
void parallel_chunks(long n, long chunk, const std::function<void(long, long, long)>& body);

}  // namespace kernelfoundry
