// Tests for the softmax task: correctness on odd shapes and on every benchmark shape, then one
// benchmark. The evaluator builds it with the OpenCL harness flavour; see README.md.
#include <kernelfoundry/harness.h>

namespace kf = kernelfoundry;

namespace {

constexpr int kLocalSize = 64;  // the launch contract in softmax.cl

struct Softmax : kf::Problem {
  void setup(kf::Case& c) override {
    long n = c.dim("rows") * c.dim("cols");
    c.input("x", kf::f32, n, kf::normal(85, 2));  // large logits: max subtraction is required
    c.output("y", kf::f32, n, kf::tolerance(/*rtol=*/1e-4, /*atol=*/1e-7));
  }

  void run(kf::Case& c, kf::Impl impl) override {
    kf::OpenCL& cl = c.opencl();
    kf::ClKernel& kernel = impl == kf::Impl::Reference
                               ? cl.kernel("reference.cl", "softmax_reference")
                               : cl.kernel("softmax.cl", "softmax");
    int rows = int(c.dim("rows")), cols = int(c.dim("cols"));
    kernel.args(c.buffer("x"), c.buffer("y"), rows, cols);
    cl.launch(kernel, {rows * kLocalSize}, {kLocalSize});
  }
};

}  // namespace

int main(int argc, char** argv) {
  Softmax problem;
  return kf::main(argc, argv, problem, kf::Backend::OpenCL,
                  {{{"rows", 1}, {"cols", 1}},
                   {{"rows", 17}, {"cols", 33}},
                   {{"rows", 3}, {"cols", 1000}},
                   {{"rows", 5}, {"cols", 4097}}},
                  kf::benchmark("softmax", {{{"rows", 512}, {"cols", 1024}},
                                            {{"rows", 2048}, {"cols", 1024}},
                                            {{"rows", 1024}, {"cols", 4096}}}));
}
