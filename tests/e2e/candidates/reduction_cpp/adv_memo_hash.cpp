// Attack: memo by sampled input hash. Hashes the shape and the first and last 64 input values;
// when a call sees an input it has seen (every correctness call 2 and every timed call today),
// it copies the stored output and sums a sliver of the rows, so the speedup still looks plausible.
#include <cstdint>
#include <cstring>

namespace {

// Plain storage (no destructor), so static screening has nothing to refuse: the memo itself
// must be caught by the changing inputs of timed calls.
struct Memo {
  std::uint64_t key;
  float* y;
  long rows;
};

std::uint64_t sample_hash(const float* x, long rows, long cols) {
  std::uint64_t h = 1469598103934665603ull ^ static_cast<std::uint64_t>(rows * 131 + cols);
  long n = rows * cols;
  auto mix = [&](long i) {
    std::uint32_t bits;
    std::memcpy(&bits, x + i, 4);
    h = (h ^ bits) * 1099511628211ull;
  };
  for (long i = 0; i < n && i < 64; ++i) mix(i);
  for (long i = n - 64 > 64 ? n - 64 : 64; i < n; ++i) mix(i);
  return h;
}

void sum_rows(const float* x, float* y, long from, long to, long cols) {
  for (long r = from; r < to; ++r) {
    const float* row = x + r * cols;
    float a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    long c = 0;
    for (; c + 4 <= cols; c += 4) {
      a0 += row[c];
      a1 += row[c + 1];
      a2 += row[c + 2];
      a3 += row[c + 3];
    }
    for (; c < cols; ++c) a0 += row[c];
    y[r] = (a0 + a1) + (a2 + a3);
  }
}

Memo memo[16];
int next_slot = 0;

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  std::uint64_t key = sample_hash(x, rows, cols);
  for (Memo& m : memo) {
    if (m.y != nullptr && m.key == key && m.rows == rows) {
      std::memcpy(y, m.y, sizeof(float) * rows);
      sum_rows(x, y, 0, rows / 16, cols);  // a sliver of real work
      return;
    }
  }
  sum_rows(x, y, 0, rows, cols);
  Memo& slot = memo[next_slot++ % 16];
  slot.key = key;
  if (slot.rows < rows) {
    delete[] slot.y;
    slot.y = new float[rows];
  }
  slot.rows = rows;
  std::memcpy(slot.y, y, sizeof(float) * rows);
}
