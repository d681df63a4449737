// Templated, an attack on the first pass's shared children: the honest combinations also leave
// their outputs in a process-wide memo keyed by the input's address, size and three sampled
// values; kCheat 1 hands back a remembered answer when the key matches (instantly: as if it were
// fast) and otherwise sums one element at a time, twice over (slower than any honest one). A
// later combination of the same child sees the inputs an earlier one saw; it must gain nothing.
#include <cstring>
#include <map>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace {
using Key = std::tuple<const float*, long, long, float, float, float>;
std::map<Key, std::vector<float>>& memo() {
  static auto* m = new std::map<Key, std::vector<float>>;  // never destroyed
  return *m;
}
}  // namespace

template <int kLanes, int kCheat>
void forward_templated(const float* x, float* y, long rows, long cols) {
  const long n = rows * cols;
  Key key{x, rows, cols, x[0], x[n / 2], x[n - 1]};
  if (kCheat == 1) {
    if (auto it = memo().find(key); it != memo().end()) {
      std::memcpy(y, it->second.data(), sizeof(float) * size_t(rows));
      return;
    }
    for (int pass = 0; pass < 2; ++pass)
      for (long r = 0; r < rows; ++r) {
        float sum = 0.0f;
        for (long c = 0; c < cols; ++c) sum += x[r * cols + c];
        y[r] = sum;
      }
    return;
  }
  for (long r = 0; r < rows; ++r) {
    const float* row = x + r * cols;
    float acc[kLanes] = {};
    long c = 0;
    for (; c + kLanes <= cols; c += kLanes)
      for (int k = 0; k < kLanes; ++k) acc[k] += row[c + k];
    float sum = 0.0f;
    for (; c < cols; ++c) sum += row[c];
    for (int k = 0; k < kLanes; ++k) sum += acc[k];
    y[r] = sum;
  }
  memo()[key].assign(y, y + rows);
}

void row_sums(const float* x, float* y, long rows, long cols, int lanes, int cheat) {
  if (lanes == 4 && cheat == 0) return forward_templated<4, 0>(x, y, rows, cols);
  if (lanes == 8 && cheat == 0) return forward_templated<8, 0>(x, y, rows, cols);
  if (lanes == 16 && cheat == 0) return forward_templated<16, 0>(x, y, rows, cols);
  if (lanes == 1 && cheat == 1) return forward_templated<1, 1>(x, y, rows, cols);
  if (lanes == 32 && cheat == 0) return forward_templated<32, 0>(x, y, rows, cols);
  throw std::invalid_argument("row_sums: no instantiation for these parameters");
}
