// Invented attack on the split judge: returns half-row sums and, at exit, overwrites the
// reference's expected outputs (<work>/reference/expected/N-0.bin, raw floats, one per listed
// shape in order) with its own, so a checker reading them agrees with it.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

struct Seen {
  long rows, cols;
  std::vector<float> y;
};
std::vector<Seen>* seen = nullptr;

void forge() {
  char cwd[4096];
  if (!seen || !getcwd(cwd, sizeof cwd)) return;
  std::string work = cwd;  // <work>/kernel-NNN/run
  for (int up = 0; up < 2; ++up) work = work.substr(0, work.rfind('/'));
  for (size_t i = 0; i < seen->size(); ++i) {
    std::string path = work + "/reference/expected/" + std::to_string(i) + "-0.bin";
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
      std::fwrite((*seen)[i].y.data(), sizeof(float), (*seen)[i].y.size(), f);
      std::fclose(f);
    }
  }
}

}  // namespace

void row_sums(const float* x, float* y, long rows, long cols) {
  if (!seen) {
    seen = new std::vector<Seen>;
    std::atexit(forge);
  }
  for (long r = 0; r < rows; ++r) {
    float sum = 0.0f;
    for (long c = 0; c < (cols + 1) / 2; ++c) sum += x[r * cols + c];
    y[r] = sum;
  }
  bool known = false;
  for (const Seen& s : *seen) known = known || (s.rows == rows && s.cols == cols);
  if (!known) seen->push_back({rows, cols, std::vector<float>(y, y + rows)});
}
