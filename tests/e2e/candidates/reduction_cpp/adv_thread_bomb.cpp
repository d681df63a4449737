// Attack: thread bomb, bounded: 2000 threads that each sleep 200 ms, joined before the first call
// returns; the sums are right.
#include <chrono>
#include <thread>
#include <vector>

namespace {

void bomb() {
  std::vector<std::thread> threads;
  for (int i = 0; i < 2000; ++i) {
    try {
      threads.emplace_back([] { std::this_thread::sleep_for(std::chrono::milliseconds(200)); });
    } catch (...) {
      break;
    }
  }
  for (auto& t : threads) t.join();
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  static bool done = (bomb(), true);
  (void)done;
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
}
