// Tests and benchmark of the trivial task, written with the KernelFoundry harness (host flavour).
#include <kernelfoundry/harness.h>

#include "add_one.h"

namespace kf = kernelfoundry;

struct AddOne : kf::Problem {
  void setup(kf::Case& c) override {
    c.input("x", kf::f32, c.dim("n"), kf::uniform(0, 1));
    c.output("y", kf::f32, c.dim("n"), kf::tolerance(/*rtol=*/1e-6, /*atol=*/1e-6));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    const float* x = c.buffer("x").host<const float>();
    float* y = c.buffer("y").host<float>();
    (impl == kf::Impl::Reference ? add_one_reference : add_one)(x, y, c.dim("n"));
  }
};

int main(int argc, char** argv) {
  AddOne problem;
  return kf::main(argc, argv, problem, kf::Backend::Host, {{{"n", 1}}, {{"n", 1001}}},
                  kf::benchmark("add_one", {{{"n", 4096}}, {{"n", 65536}}}));
}
