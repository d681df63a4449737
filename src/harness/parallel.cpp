// Fixed-chunk parallel loops for the harness's host work.
#include "harness/parallel.h"

#include <algorithm>
#include <atomic>
#include <system_error>
#include <thread>
#include <vector>

namespace kernelfoundry {

unsigned host_threads() {
  return std::min<unsigned>(std::max(1u, std::thread::hardware_concurrency()), 16);
}

void parallel_chunks(long n, long chunk, const std::function<void(long, long, long)>& body) {
  if (n <= 0) return;
  chunk = std::max(1L, chunk);
  long chunks = (n + chunk - 1) / chunk;
  auto run_chunk = [&](long c) { body(c, c * chunk, std::min(n, (c + 1) * chunk)); };
  unsigned threads = unsigned(std::min<long>(host_threads(), chunks));
  if (threads <= 1) {
    for (long c = 0; c < chunks; ++c) run_chunk(c);
    return;
  }
  std::atomic<long> next{0};
  auto worker = [&] {
    for (long c = next++; c < chunks; c = next++) run_chunk(c);
  };
  std::vector<std::thread> pool;
  try {
    for (unsigned t = 1; t < threads; ++t) pool.emplace_back(worker);
  } catch (const std::system_error&) {  // no more threads: the ones started and this one finish
  }
  worker();
  for (auto& t : pool) t.join();
}

}  // namespace kernelfoundry
