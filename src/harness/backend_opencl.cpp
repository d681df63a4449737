// The OpenCL backend: buffers are cl_mem objects on the runtime's device; a call's device time is
// the span of the profiling events of the launches made through kf::OpenCL.
#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "harness/device.h"
#include "harness/opencl_runtime.h"

namespace kernelfoundry {
namespace {

// Host memory that backs a buffer (CL_MEM_USE_HOST_PTR), freed when the runtime destroys the
// buffer: a release only drops our reference, and queued commands may still use the memory.
struct HostStorage {
  void* data;
  std::size_t length;
};

void CL_CALLBACK free_host_storage(cl_mem, void* user) {
  auto* storage = static_cast<HostStorage*>(user);
  munmap(storage->data, storage->length);
  delete storage;
}

class OpenCLDevice : public Device {
 public:
  explicit OpenCLDevice(const DeviceOptions& options) : runtime_(options.kernel_dir) {
    own_storage_ = runtime_.is_cpu() && storage_is_shared();
  }
  ~OpenCLDevice() override {
    if (flush_mem_) clReleaseMemObject(flush_mem_);
  }

  Backend backend() const override { return Backend::OpenCL; }
  std::string name() const override { return runtime_.device_name(); }
  std::vector<std::pair<std::string, std::string>> info() const override {
    std::vector<std::pair<std::string, std::string>> info = {
        {"platform", runtime_.platform_name()},
        {"device_type", runtime_.is_cpu() ? "cpu" : "gpu"},
        {"device_version", runtime_.device_version()},
        {"driver", runtime_.driver_version()}};
    for (auto& limit : runtime_.limits()) info.push_back(std::move(limit));
    return info;
  }

  // No guard page here (alloc_buffer keeps the default: the guard pattern after the data), so an
  // over-read by a kernel is not caught; over-writes are, by the guard pattern. Host-side staging
  // copies are sized exactly by the harness.
  //
  // On a CPU device whose buffers can live in our memory (storage_is_shared), each buffer is
  // backed by page-aligned host memory we map (CL_MEM_USE_HOST_PTR), so that a cold call evicts
  // exactly the buffers' cache lines (flush_caches) instead of overwriting twice the last-level
  // cache: 960 MiB per call on a VM that reports its host's whole L3. An over-read past such a
  // buffer reads this process's own memory (the candidate's child holds no reference outputs;
  // the judge is another process), as it did with the runtime's own allocations.
  void* alloc(std::size_t bytes) override {
    const std::size_t size = std::max<std::size_t>(bytes, 1);
    cl_int err = CL_SUCCESS;
    cl_mem mem = nullptr;
    if (own_storage_) {
      auto* storage = new HostStorage{map_host_aligned(size), size};
      if (storage->data == nullptr) {
        delete storage;
        throw DeviceError("host allocation of " + std::to_string(bytes) +
                          " bytes failed: " + std::strerror(errno));
      }
      mem = clCreateBuffer(runtime_.context(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size,
                           storage->data, &err);
      if (err == CL_SUCCESS)
        err = clSetMemObjectDestructorCallback(mem, free_host_storage, storage);
      if (err != CL_SUCCESS) {
        if (mem != nullptr) clReleaseMemObject(mem);
        munmap(storage->data, storage->length);
        delete storage;
      } else {
        std::lock_guard<std::mutex> lock(mutex_);
        storage_[mem] = *storage;
      }
    } else {
      mem = clCreateBuffer(runtime_.context(), CL_MEM_READ_WRITE, size, nullptr, &err);
    }
    if (err != CL_SUCCESS) {
      throw DeviceError("clCreateBuffer(" + std::to_string(bytes) +
                        " bytes) failed: " + cl_error_name(err));
    }
    return mem;
  }
  void release(void* mem) noexcept override {
    if (mem == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      storage_.erase(static_cast<cl_mem>(mem));
    }
    clReleaseMemObject(static_cast<cl_mem>(mem));
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
  // buffer and packed on the host. The rectangle covers all rows but the last, which is copied on
  // its own: NVIDIA's OpenCL refuses a rectangle whose last row's pitch (not just its bytes) runs
  // past the buffer's end (CL_INVALID_VALUE), as the last strided element of a buffer does.
  void upload_strided(void* mem, std::size_t offset, std::size_t pitch, const void* src,
                      std::size_t elem_bytes, std::size_t count) override {
    if (count == 0) return;
    const std::size_t origin[3] = {offset, 0, 0}, host_origin[3] = {0, 0, 0};
    const std::size_t region[3] = {elem_bytes, count - 1, 1};
    if (count > 1)
      KF_CL_CHECK(clEnqueueWriteBufferRect(runtime_.queue(), static_cast<cl_mem>(mem), CL_FALSE,
                                           origin, host_origin, region, pitch, 0, elem_bytes, 0,
                                           src, 0, nullptr, nullptr));
    KF_CL_CHECK(clEnqueueWriteBuffer(
        runtime_.queue(), static_cast<cl_mem>(mem), CL_TRUE, offset + (count - 1) * pitch,
        elem_bytes, static_cast<const unsigned char*>(src) + (count - 1) * elem_bytes, 0, nullptr,
        nullptr));
  }
  void download_strided(void* mem, std::size_t offset, std::size_t pitch, void* dst,
                        std::size_t elem_bytes, std::size_t count) override {
    if (count == 0) return;
    const std::size_t origin[3] = {offset, 0, 0}, host_origin[3] = {0, 0, 0};
    const std::size_t region[3] = {elem_bytes, count - 1, 1};
    if (count > 1)
      KF_CL_CHECK(clEnqueueReadBufferRect(runtime_.queue(), static_cast<cl_mem>(mem), CL_FALSE,
                                          origin, host_origin, region, pitch, 0, elem_bytes, 0, dst,
                                          0, nullptr, nullptr));
    KF_CL_CHECK(clEnqueueReadBuffer(runtime_.queue(), static_cast<cl_mem>(mem), CL_TRUE,
                                    offset + (count - 1) * pitch, elem_bytes,
                                    static_cast<unsigned char*>(dst) + (count - 1) * elem_bytes, 0,
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
    cl_mem from = static_cast<cl_mem>(const_cast<void*>(src)), to = static_cast<cl_mem>(dst);
    const std::size_t origin[3] = {offset, 0, 0}, region[3] = {elem_bytes, count - 1, 1};
    if (count > 1)
      KF_CL_CHECK(clEnqueueCopyBufferRect(runtime_.queue(), from, to, origin, origin, region, pitch,
                                          0, pitch, 0, 0, nullptr, nullptr));
    const std::size_t last = offset + (count - 1) * pitch;
    KF_CL_CHECK(clEnqueueCopyBuffer(runtime_.queue(), from, to, last, last, elem_bytes, 0, nullptr,
                                    nullptr));
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
    if (own_storage_) {
      // A CPU device over our memory: evict the buffers' lines from every core's caches, then
      // overwrite this core's private caches (as the host backend does).
      synchronize();
      bool evicted = true;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (const auto& [mem, storage] : storage_)
          evicted = evict_host_lines(storage.data, storage.length) && evicted;
      }
      if (evicted) {
        flush_host_caches(host_flush_, private_flush_bytes());
        return;
      }
    }
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

  // Over our memory, only the call's buffers (Device::flush_caches_for); else everything.
  void flush_caches_for(const std::vector<void*>& buffers) override {
    if (!own_storage_) return flush_caches();
    synchronize();
    bool evicted = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (void* mem : buffers) {
        auto it = storage_.find(static_cast<cl_mem>(mem));
        evicted =
            it != storage_.end() && evict_host_lines(it->second.data, it->second.length) && evicted;
        if (!evicted) break;
      }
    }
    if (!evicted) return flush_caches();
    flush_host_caches(host_flush_, private_flush_bytes());
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
  // Whether a buffer made over our memory (CL_MEM_USE_HOST_PTR) really keeps its contents there:
  // a write through our pointer shows in a read of the buffer, and a write to the buffer shows
  // at our pointer. A runtime that copies to storage of its own fails this, and its buffers'
  // lines are not ours to evict.
  bool storage_is_shared() {
    constexpr std::size_t kBytes = 4096;
    void* data = map_host_aligned(kBytes);
    if (data == nullptr) return false;
    auto* bytes = static_cast<unsigned char*>(data);
    cl_int err = CL_SUCCESS;
    cl_mem mem = clCreateBuffer(runtime_.context(), CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, kBytes,
                                data, &err);
    if (err != CL_SUCCESS) {
      munmap(data, kBytes);
      return false;
    }
    bool shared = clSetMemObjectDestructorCallback(mem, free_host_storage,
                                                   new HostStorage{data, kBytes}) == CL_SUCCESS;
    if (shared) {
      std::vector<unsigned char> seen(kBytes), pattern(kBytes);
      for (std::size_t i = 0; i < kBytes; ++i) pattern[i] = static_cast<unsigned char>(i * 7 + 3);
      std::memcpy(bytes, pattern.data(), kBytes);
      shared = clEnqueueReadBuffer(runtime_.queue(), mem, CL_TRUE, 0, kBytes, seen.data(), 0,
                                   nullptr, nullptr) == CL_SUCCESS &&
               seen == pattern;
      for (auto& b : pattern) b = static_cast<unsigned char>(~b);
      shared = shared &&
               clEnqueueWriteBuffer(runtime_.queue(), mem, CL_TRUE, 0, kBytes, pattern.data(), 0,
                                    nullptr, nullptr) == CL_SUCCESS &&
               clFinish(runtime_.queue()) == CL_SUCCESS &&
               std::memcmp(bytes, pattern.data(), kBytes) == 0;
    }
    clReleaseMemObject(mem);  // the memory goes with the buffer (or stays mapped, 4 KiB, if the
                              // callback could not be set)
    return shared;
  }

  OpenCLRuntime runtime_;
  bool own_storage_ = false;
  std::mutex mutex_;
  std::unordered_map<cl_mem, HostStorage> storage_;  // buffers over our memory, by buffer
  std::vector<unsigned char> host_flush_;
  cl_mem flush_mem_ = nullptr;
  cl_uint flush_value_ = 0;
};

}  // namespace

std::unique_ptr<Device> make_opencl_device(const DeviceOptions& options) {
  return std::make_unique<OpenCLDevice>(options);
}

}  // namespace kernelfoundry
