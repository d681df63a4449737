// Tests and benchmark of the search-quality task, written with the KernelFoundry harness (host
// flavour).
#include <kernelfoundry/harness.h>

#include "scale.h"

namespace kf = kernelfoundry;

struct ScaleShift : kf::Problem {
  void setup(kf::Case& c) override {
    c.input("x", kf::f32, c.dim("n"), kf::uniform(-1, 1));
    c.output("y", kf::f32, c.dim("n"), kf::tolerance(/*rtol=*/1e-6, /*atol=*/1e-6));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    const float* x = c.buffer("x").host<const float>();
    float* y = c.buffer("y").host<float>();
    (impl == kf::Impl::Reference ? scale_shift_reference : scale_shift)(x, y, c.dim("n"));
  }
};

int main(int argc, char** argv) {
  ScaleShift problem;
  return kf::main(argc, argv, problem, kf::Backend::Host, {{{"n", 1}}, {{"n", 1001}}},
                  kf::benchmark("scale_shift", {{{"n", 4096}}}));
}
