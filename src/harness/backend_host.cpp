// The host backend: buffers in aligned host memory and steady_clock timing.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "harness/device.h"

namespace kernelfoundry {

namespace {

std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      std::size_t colon = line.find(':');
      if (colon != std::string::npos) {
        std::size_t start = line.find_first_not_of(' ', colon + 1);
        return start == std::string::npos ? "" : line.substr(start);
      }
    }
  }
  return "host CPU";
}

class HostDevice : public Device {
 public:
  Backend backend() const override { return Backend::Host; }
  std::string name() const override { return name_; }
  std::vector<std::pair<std::string, std::string>> info() const override {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return {{"cpus", std::to_string(cpus)}};
  }

  void* alloc(std::size_t bytes) override {
    std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 63) / 64 * 64;
    void* p = std::aligned_alloc(64, rounded);
    if (p == nullptr)
      throw DeviceError("host allocation of " + std::to_string(bytes) + " bytes failed");
    return p;
  }
  void release(void* mem) noexcept override { std::free(mem); }
  const void* host_view(void* mem) const override { return mem; }

  void upload(void* mem, std::size_t offset, const void* src, std::size_t bytes) override {
    std::memcpy(static_cast<char*>(mem) + offset, src, bytes);
  }
  void download(void* mem, std::size_t offset, void* dst, std::size_t bytes) override {
    std::memcpy(dst, static_cast<const char*>(mem) + offset, bytes);
  }
  void fill(void* mem, std::size_t offset, const void* pattern, std::size_t pattern_bytes,
            std::size_t bytes) override {
    char* dst = static_cast<char*>(mem) + offset;
    if (bytes == 0) return;
    std::memcpy(dst, pattern, std::min(pattern_bytes, bytes));
    // Doubling copies: log2(bytes / pattern_bytes) memcpy calls.
    for (std::size_t done = pattern_bytes; done < bytes; done *= 2) {
      std::memcpy(dst + done, dst, std::min(done, bytes - done));
    }
  }
  void synchronize() override {}
  void flush_caches() override { flush_host_caches(flush_buffer_); }

  void begin_call() override { start_ = std::chrono::steady_clock::now(); }
  double end_call() override {
    auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(end - start_).count();
  }

 private:
  std::string name_ = cpu_model_name();
  std::vector<unsigned char> flush_buffer_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::unique_ptr<Device> make_host_device() {
  return std::make_unique<HostDevice>();
}

}  // namespace kernelfoundry
