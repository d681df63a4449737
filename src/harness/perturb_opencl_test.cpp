// The strided device copies of the OpenCL backend (clEnqueueWrite/Read/CopyBufferRect, PoCL
// here): a perturbation made on OpenCL buffers equals the host checker's re-application bit for
// bit, and restoring (from pristine device copies) gives back the uploaded bytes.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include "harness/device.h"
#include "harness/fill.h"
#include "harness/perturb.h"
#include "harness/strided_copy_check.h"

namespace kernelfoundry {
namespace {

std::vector<unsigned char> bytes_of(const Buffer& b) {
  std::vector<unsigned char> out(b.bytes());
  b.read_bytes(out.data(), out.size());
  return out;
}

void declare(CaseState& cs) {
  Case c(&cs);
  c.input("a", f32, 100003, uniform(0, 1));
  c.input("idx", i32, 77, ints(-3, 3));
  c.input("h", f16, 4099, normal(0, 1));
  c.input("d", f64, 1, uniform(0, 1));
}

TEST(PerturbOpenCL, StridedCopiesMatchTheHostChecker) {
  std::unique_ptr<Device> cl = make_opencl_device(DeviceOptions{});
  std::unique_ptr<Device> host = make_host_device();
  RunContext cl_ctx, host_ctx;
  cl_ctx.device = cl.get();
  host_ctx.device = host.get();
  CaseState cand(cl_ctx, Shape{{"n", 1}}, 4), check(host_ctx, Shape{{"n", 1}}, 4);
  declare(cand);
  declare(check);
  std::vector<std::vector<unsigned char>> original;
  for (auto& b : cand.inputs) original.push_back(bytes_of(*b));

  std::mt19937_64 rng(21);
  PerturbUndo undo;
  std::vector<Perturbation> last;
  for (int call = 0; call < 6; ++call) last = perturb_inputs(cand, rng, &undo);
  ASSERT_EQ(last.size(), 4u);
  // Device memory is put back from pristine device copies: nothing was read back to the host.
  for (std::size_t i = 0; i < cand.inputs.size(); ++i)
    EXPECT_NE(undo.pristine_of(i), nullptr) << cand.inputs[i]->name();
  for (const auto& saved : undo.saved) EXPECT_TRUE(saved.second.empty());
  PerturbUndo applied;
  std::string err;
  ASSERT_TRUE(apply_perturbation(check, last, &applied, &err)) << err;
  for (std::size_t i = 0; i < cand.inputs.size(); ++i) {
    EXPECT_EQ(bytes_of(*cand.inputs[i]), bytes_of(*check.inputs[i])) << cand.inputs[i]->name();
    EXPECT_NE(bytes_of(*cand.inputs[i]), original[i]) << cand.inputs[i]->name();
  }
  restore_inputs(cand, &undo);
  for (std::size_t i = 0; i < cand.inputs.size(); ++i) {
    std::vector<unsigned char> now = bytes_of(*cand.inputs[i]);
    EXPECT_EQ(now, original[i]) << cand.inputs[i]->name();
    EXPECT_EQ(checksum_chunked(now.data(), now.size()), cand.input_sums[i]);
  }
}

// The OpenCL backend's strided copies up to the buffer's end, for every element size (the
// platform KF_OPENCL_PLATFORM picks: PoCL here; NVIDIA's OpenCL on the GPU machine, which refused
// a rectangle whose last pitch ran past the end).
class StridedCopyOpenCL : public ::testing::TestWithParam<std::size_t> {};

TEST_P(StridedCopyOpenCL, SpreadsAndCollectsExactlyTheStridedElements) {
  std::unique_ptr<Device> cl = make_opencl_device(DeviceOptions{});
  testing::check_strided_copies(*cl, GetParam(), (std::size_t(1) << 18) + 13);
}

INSTANTIATE_TEST_SUITE_P(ElementSizes, StridedCopyOpenCL, ::testing::Values(1, 2, 4, 8));

}  // namespace
}  // namespace kernelfoundry
