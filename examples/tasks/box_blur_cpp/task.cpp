// How we check the blur: odd sizes and single rows/columns for the borders, then real frame sizes.
#include <kernelfoundry/harness.h>

#include "blur.h"

namespace kf = kernelfoundry;

struct BoxBlur : kf::Problem {
  void setup(kf::Case& c) override {
    long pixels = c.dim("width") * c.dim("height");
    c.input("src", kf::f32, pixels, kf::uniform(0, 1));
    c.output("dst", kf::f32, pixels, kf::tolerance(/*rtol=*/1e-5, /*atol=*/1e-6));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    const float* src = c.buffer("src").host<const float>();
    float* dst = c.buffer("dst").host<float>();
    int w = int(c.dim("width")), h = int(c.dim("height"));
    (impl == kf::Impl::Reference ? box_blur_3x3_shipped : box_blur_3x3)(src, dst, w, h);
  }
};

int main(int argc, char** argv) {
  BoxBlur problem;
  return kf::main(argc, argv, problem, kf::Backend::Host,
                  {{{"width", 1}, {"height", 1}}, {{"width", 1}, {"height", 37}},
                   {{"width", 53}, {"height", 1}}, {{"width", 101}, {"height", 67}}},
                  kf::benchmark("box_blur", {{{"width", 640}, {"height", 480}},
                                             {{"width", 1920}, {"height", 1080}},
                                             {{"width", 3840}, {"height", 2160}}}));
}
