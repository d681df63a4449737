// Tests and benchmark of the CUDA SGEMM task, written with the KernelFoundry harness.
#include <kernelfoundry/harness.h>

#include "matmul.h"

namespace kf = kernelfoundry;

struct Matmul : kf::Problem {
  void setup(kf::Case& c) override {
    long m = c.dim("m"), n = c.dim("n"), k = c.dim("k");
    c.input("a", kf::f32, m * k, kf::uniform(-1, 1));
    c.input("b", kf::f32, k * n, kf::uniform(-1, 1));
    // Sums of k products: a relative tolerance with an absolute floor for results near zero.
    c.output("c", kf::f32, m * n, kf::tolerance(1e-3, 1e-3));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    const float* a = c.buffer("a").cuda<const float>();
    const float* b = c.buffer("b").cuda<const float>();
    float* out = c.buffer("c").cuda<float>();
    int m = static_cast<int>(c.dim("m")), n = static_cast<int>(c.dim("n")), k = static_cast<int>(c.dim("k"));
    (impl == kf::Impl::Reference ? matmul_reference : matmul_forward)(a, b, out, m, n, k);
  }
};

int main(int argc, char** argv) {
  Matmul problem;
  return kf::main(argc, argv, problem, kf::Backend::CUDA,
                  {{{"m", 1}, {"n", 1}, {"k", 1}}, {{"m", 17}, {"n", 33}, {"k", 65}},
                   {{"m", 128}, {"n", 96}, {"k", 200}}, {{"m", 255}, {"n", 257}, {"k", 129}}},
                  kf::benchmark("sgemm", {{{"m", 1024}, {"n", 1024}, {"k", 1024}},
                                          {{"m", 2048}, {"n", 2048}, {"k", 2048}},
                                          {{"m", 4096}, {"n", 4096}, {"k", 1024}}}));
}
