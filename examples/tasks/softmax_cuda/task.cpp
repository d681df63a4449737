// Tests and benchmark of the CUDA softmax task, written with the KernelFoundry harness.
#include <kernelfoundry/harness.h>

#include "softmax.h"

namespace kf = kernelfoundry;

struct Softmax : kf::Problem {
  void setup(kf::Case& c) override {
    long n = c.dim("rows") * c.dim("cols");
    c.input("x", kf::f32, n, kf::normal(0, 3));
    // rtol 1e-3: a row of 32768 summed in a different order (one thread vs a tree) differs by
    // more than 1e-4 in float; both orders are legitimate.
    c.output("y", kf::f32, n, kf::tolerance(1e-3, 1e-7));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    const float* x = c.buffer("x").cuda<const float>();
    float* y = c.buffer("y").cuda<float>();
    int rows = static_cast<int>(c.dim("rows")), cols = static_cast<int>(c.dim("cols"));
    (impl == kf::Impl::Reference ? softmax_reference : softmax_forward)(x, y, rows, cols);
  }
};

int main(int argc, char** argv) {
  Softmax problem;
  return kf::main(argc, argv, problem, kf::Backend::CUDA,
                  {{{"rows", 1}, {"cols", 1}}, {{"rows", 3}, {"cols", 1000}},
                   {{"rows", 17}, {"cols", 33}}, {{"rows", 130}, {"cols", 4097}}},
                  kf::benchmark("softmax", {{{"rows", 4096}, {"cols", 1024}},
                                            {{"rows", 8192}, {"cols", 4096}},
                                            {{"rows", 1024}, {"cols", 32768}}}));
}
