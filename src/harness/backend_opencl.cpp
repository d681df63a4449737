// The OpenCL backend: buffers are cl_mem objects on the runtime's device; a call's device time is
// the span of the profiling events of the launches made through kf::OpenCL.
#include <algorithm>
#include <vector>

#include "harness/device.h"
#include "harness/opencl_runtime.h"

namespace kernelfoundry {
namespace {

class OpenCLDevice : public Device {
 public:
  explicit OpenCLDevice(const DeviceOptions& options) : runtime_(options.kernel_dir) {}
  ~OpenCLDevice() override {
    if (flush_mem_) clReleaseMemObject(flush_mem_);
  }

  Backend backend() const override { return Backend::OpenCL; }
  std::string name() const override { return runtime_.device_name(); }
  std::vector<std::pair<std::string, std::string>> info() const override {
    return {{"platform", runtime_.platform_name()},
            {"device_type", runtime_.is_cpu() ? "cpu" : "gpu"},
            {"device_version", runtime_.device_version()},
            {"driver", runtime_.driver_version()}};
  }

  // No guard page here (alloc_buffer keeps the default: the guard pattern after the data). A
  // cl_mem is the runtime's own allocation, not ours to place before a protected page, and the
  // kernel's reads go through the device's view of it, not through host code: even on PoCL,
  // where the device is this CPU, an over-read by a kernel is not a host read of our memory.
  // Host-side staging copies are sized exactly by the harness. Over-writes are still caught by
  // the guard pattern.
  void* alloc(std::size_t bytes) override {
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(runtime_.context(), CL_MEM_READ_WRITE,
                                std::max<std::size_t>(bytes, 1), nullptr, &err);
    if (err != CL_SUCCESS) {
      throw DeviceError("clCreateBuffer(" + std::to_string(bytes) +
                        " bytes) failed: " + cl_error_name(err));
    }
    return mem;
  }
  void release(void* mem) noexcept override {
    if (mem) clReleaseMemObject(static_cast<cl_mem>(mem));
  }

  void upload(void* mem, std::size_t offset, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    KF_CL_CHECK(clEnqueueWriteBuffer(runtime_.queue(), static_cast<cl_mem>(mem), CL_TRUE, offset,
                                     bytes, src, 0, nullptr, nullptr));
  }
  void download(void* mem, std::size_t offset, void* dst, std::size_t bytes) override {
    if (bytes == 0) return;
    KF_CL_CHECK(clEnqueueReadBuffer(runtime_.queue(), static_cast<cl_mem>(mem), CL_TRUE, offset,
                                    bytes, dst, 0, nullptr, nullptr));
  }
  // Rectangular copies: each element is one "row" of elem_bytes, rows `pitch` apart in the
  // buffer and packed on the host.
  void upload_strided(void* mem, std::size_t offset, std::size_t pitch, const void* src,
                      std::size_t elem_bytes, std::size_t count) override {
    if (count == 0) return;
    const std::size_t origin[3] = {offset, 0, 0}, host_origin[3] = {0, 0, 0};
    const std::size_t region[3] = {elem_bytes, count, 1};
    KF_CL_CHECK(clEnqueueWriteBufferRect(runtime_.queue(), static_cast<cl_mem>(mem), CL_TRUE,
                                         origin, host_origin, region, pitch, 0, elem_bytes, 0, src,
                                         0, nullptr, nullptr));
  }
  void download_strided(void* mem, std::size_t offset, std::size_t pitch, void* dst,
                        std::size_t elem_bytes, std::size_t count) override {
    if (count == 0) return;
    const std::size_t origin[3] = {offset, 0, 0}, host_origin[3] = {0, 0, 0};
    const std::size_t region[3] = {elem_bytes, count, 1};
    KF_CL_CHECK(clEnqueueReadBufferRect(runtime_.queue(), static_cast<cl_mem>(mem), CL_TRUE, origin,
                                        host_origin, region, pitch, 0, elem_bytes, 0, dst, 0,
                                        nullptr, nullptr));
  }
  void copy(void* dst, const void* src, std::size_t offset, std::size_t bytes) override {
    if (bytes == 0) return;
    KF_CL_CHECK(clEnqueueCopyBuffer(runtime_.queue(), static_cast<cl_mem>(const_cast<void*>(src)),
                                    static_cast<cl_mem>(dst), offset, offset, bytes, 0, nullptr,
                                    nullptr));
    KF_CL_CHECK(clFinish(runtime_.queue()));
  }
  void copy_strided(void* dst, const void* src, std::size_t offset, std::size_t pitch,
                    std::size_t elem_bytes, std::size_t count) override {
    if (count == 0) return;
    const std::size_t origin[3] = {offset, 0, 0}, region[3] = {elem_bytes, count, 1};
    KF_CL_CHECK(clEnqueueCopyBufferRect(
        runtime_.queue(), static_cast<cl_mem>(const_cast<void*>(src)), static_cast<cl_mem>(dst),
        origin, origin, region, pitch, 0, pitch, 0, 0, nullptr, nullptr));
    KF_CL_CHECK(clFinish(runtime_.queue()));
  }
  void fill(void* mem, std::size_t offset, const void* pattern, std::size_t pattern_bytes,
            std::size_t bytes) override {
    if (bytes == 0) return;
    bool native = pattern_bytes <= 128 && (pattern_bytes & (pattern_bytes - 1)) == 0;
    if (native) {
      KF_CL_CHECK(clEnqueueFillBuffer(runtime_.queue(), static_cast<cl_mem>(mem), pattern,
                                      pattern_bytes, offset, bytes, 0, nullptr, nullptr));
      return;
    }
    std::vector<unsigned char> host(bytes);
    for (std::size_t i = 0; i < bytes; i += pattern_bytes) {
      std::copy_n(static_cast<const unsigned char*>(pattern), pattern_bytes, host.data() + i);
    }
    upload(mem, offset, host.data(), bytes);
  }
  void synchronize() override { KF_CL_CHECK(clFinish(runtime_.queue())); }

  void flush_caches() override {
    flush_host_caches(host_flush_);
    if (!runtime_.is_cpu()) {  // a GPU's caches are not the host's: overwrite a device buffer
      std::size_t bytes =
          std::max<std::size_t>(std::size_t(64) << 20, 2 * runtime_.global_cache_bytes());
      if (flush_mem_ == nullptr) flush_mem_ = static_cast<cl_mem>(alloc(bytes));
      cl_uint value = ++flush_value_;
      KF_CL_CHECK(clEnqueueFillBuffer(runtime_.queue(), flush_mem_, &value, sizeof value, 0, bytes,
                                      0, nullptr, nullptr));
    }
    synchronize();
  }

  void begin_call() override { runtime_.clear_events(); }
  double end_call() override {
    cl_int err = clFinish(runtime_.queue());
    if (err != CL_SUCCESS) {
      runtime_.clear_events();
      throw DeviceError("clFinish after run() failed: " + cl_error_name(err) +
                        " (a kernel faulted or the device was lost)");
    }
    double ms;
    try {
      ms = runtime_.events_ms();
    } catch (...) {
      runtime_.clear_events();
      throw;
    }
    runtime_.clear_events();
    return ms;
  }

  OpenCL* opencl() override { return &runtime_; }

 private:
  OpenCLRuntime runtime_;
  std::vector<unsigned char> host_flush_;
  cl_mem flush_mem_ = nullptr;
  cl_uint flush_value_ = 0;
};

}  // namespace

std::unique_ptr<Device> make_opencl_device(const DeviceOptions& options) {
  return std::make_unique<OpenCLDevice>(options);
}

}  // namespace kernelfoundry
