// MeteredDevice: the time of each device operation, added up per kind.
#include "harness/metered_device.h"

#include <chrono>

namespace kernelfoundry {

namespace {

class Meter {
 public:
  explicit Meter(double* sum) : sum_(sum), start_(std::chrono::steady_clock::now()) {}
  ~Meter() {
    *sum_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double* sum_;
  std::chrono::steady_clock::time_point start_;
};

class MeteredDevice final : public Device {
 public:
  MeteredDevice(Device* inner, DeviceTimes* times) : d_(inner), t_(times) {}
  Backend backend() const override { return d_->backend(); }
  std::string name() const override { return d_->name(); }
  std::vector<std::pair<std::string, std::string>> info() const override { return d_->info(); }
  void* alloc(std::size_t bytes) override {
    Meter m(&t_->alloc);
    return d_->alloc(bytes);
  }
  void release(void* mem) noexcept override {
    Meter m(&t_->release);
    d_->release(mem);
  }
  void* alloc_buffer(const std::string& name, std::size_t bytes) override {
    Meter m(&t_->alloc);
    return d_->alloc_buffer(name, bytes);
  }
  bool page_guarded(const void* mem) const override { return d_->page_guarded(mem); }
  bool placement_varies() const override { return d_->placement_varies(); }
  const void* host_view(void* mem) const override { return d_->host_view(mem); }
  void upload(void* mem, std::size_t offset, const void* src, std::size_t bytes) override {
    Meter m(&t_->upload);
    d_->upload(mem, offset, src, bytes);
  }
  void download(void* mem, std::size_t offset, void* dst, std::size_t bytes) override {
    Meter m(&t_->download);
    d_->download(mem, offset, dst, bytes);
  }
  void upload_strided(void* mem, std::size_t offset, std::size_t pitch, const void* src,
                      std::size_t elem_bytes, std::size_t count) override {
    Meter m(&t_->upload);
    d_->upload_strided(mem, offset, pitch, src, elem_bytes, count);
  }
  void download_strided(void* mem, std::size_t offset, std::size_t pitch, void* dst,
                        std::size_t elem_bytes, std::size_t count) override {
    Meter m(&t_->download);
    d_->download_strided(mem, offset, pitch, dst, elem_bytes, count);
  }
  void copy(void* dst, const void* src, std::size_t offset, std::size_t bytes) override {
    Meter m(&t_->copy);
    d_->copy(dst, src, offset, bytes);
  }
  void copy_strided(void* dst, const void* src, std::size_t offset, std::size_t pitch,
                    std::size_t elem_bytes, std::size_t count) override {
    Meter m(&t_->copy);
    d_->copy_strided(dst, src, offset, pitch, elem_bytes, count);
  }
  void fill(void* mem, std::size_t offset, const void* pattern, std::size_t pattern_bytes,
            std::size_t bytes) override {
    Meter m(&t_->fill);
    d_->fill(mem, offset, pattern, pattern_bytes, bytes);
  }
  void synchronize() override {
    Meter m(&t_->sync);
    d_->synchronize();
  }
  void flush_caches() override {
    Meter m(&t_->flush);
    d_->flush_caches();
  }
  void flush_caches_for(const std::vector<void*>& buffers) override {
    Meter m(&t_->flush);
    d_->flush_caches_for(buffers);
  }
  void begin_call() override { d_->begin_call(); }
  double end_call() override { return d_->end_call(); }
  void profile_next_call() override { d_->profile_next_call(); }
  std::string take_timing_note() override { return d_->take_timing_note(); }
  std::string take_timer_note() override { return d_->take_timer_note(); }
  std::string last_timer() const override { return d_->last_timer(); }
  OpenCL* opencl() override { return d_->opencl(); }

 private:
  Device* d_;
  DeviceTimes* t_;
};

}  // namespace

std::vector<std::pair<std::string, double>> DeviceTimes::phases() const {
  return {{"device.alloc", alloc},
          {"device.release", release},
          {"device.upload", upload},
          {"device.download", download},
          {"device.copy", copy},
          {"device.fill", fill},
          {"device.sync", sync},
          {"device.flush", flush},
          {"host.fill", host_fill_seconds()}};
}

std::unique_ptr<Device> make_metered_device(Device* inner, DeviceTimes* times) {
  return std::make_unique<MeteredDevice>(inner, times);
}

}  // namespace kernelfoundry
