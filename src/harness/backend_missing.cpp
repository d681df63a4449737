// Stand-ins for the backends a flavour does not link, so every flavour defines every symbol and a
// task linked with the wrong one gets a message saying which library it needs.
#include "harness/device.h"

namespace kernelfoundry {

#ifndef KF_HARNESS_OPENCL
namespace {
[[noreturn]] void no_opencl() {
  throw Error(
      "this task binary has no OpenCL support: link -lkf_harness_opencl -lOpenCL instead of the "
      "harness flavour it was built with");
}
}  // namespace

std::unique_ptr<Device> make_opencl_device(const DeviceOptions&) {
  no_opencl();
}
void ClKernel::set_arg(unsigned, const Buffer&) {
  no_opencl();
}
void ClKernel::set_arg(unsigned, LocalMem) {
  no_opencl();
}
void ClKernel::set_arg_raw(unsigned, std::size_t, const void*) {
  no_opencl();
}
#endif

#ifndef KF_HARNESS_CUDA
std::unique_ptr<Device> make_cuda_device(const DeviceOptions&) {
  throw Error(
      "this task binary has no CUDA support: link -lkf_harness_cuda -lcudart instead of the "
      "harness flavour it was built with");
}
#endif

}  // namespace kernelfoundry
