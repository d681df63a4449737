// Tests and benchmark of the row-sum task, written with the KernelFoundry harness (host flavour).
#include <kernelfoundry/harness.h>

#include "reduce.h"

namespace kf = kernelfoundry;

struct RowSums : kf::Problem {
  void setup(kf::Case& c) override {
    c.input("x", kf::f32, c.dim("rows") * c.dim("cols"), kf::uniform(0, 1));
    c.output("y", kf::f32, c.dim("rows"), kf::tolerance(/*rtol=*/1e-4, /*atol=*/1e-3));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    const float* x = c.buffer("x").host<const float>();
    float* y = c.buffer("y").host<float>();
    (impl == kf::Impl::Reference ? row_sums_reference : row_sums)(x, y, c.dim("rows"),
                                                                  c.dim("cols"));
  }
};

int main(int argc, char** argv) {
  RowSums problem;
  return kf::main(argc, argv, problem, kf::Backend::Host,
                  {{{"rows", 1}, {"cols", 1}}, {{"rows", 7}, {"cols", 1001}},
                   {{"rows", 64}, {"cols", 33}}, {{"rows", 3}, {"cols", 65537}}},
                  kf::benchmark("row_sums", {{{"rows", 1024}, {"cols", 1024}},
                                             {{"rows", 4096}, {"cols", 4096}},
                                             {{"rows", 64}, {"cols", 262144}}}));
}
