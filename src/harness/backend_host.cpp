// The host backend: buffers in host memory that ends at a guard page, and steady_clock timing.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <unordered_map>

#include "harness/crash.h"
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

// `count` elements of `size` bytes from src + k * src_pitch to dst + k * dst_pitch; the common
// sizes as fixed-size copies, so the loop is a load and a store per element.
template <std::size_t N>
void copy_elements(char* dst, std::size_t dst_pitch, const char* src, std::size_t src_pitch,
                   std::size_t count) {
  for (std::size_t k = 0; k < count; ++k) std::memcpy(dst + k * dst_pitch, src + k * src_pitch, N);
}

void strided_copy(char* dst, std::size_t dst_pitch, const char* src, std::size_t src_pitch,
                  std::size_t size, std::size_t count) {
  switch (size) {
    case 1:
      return copy_elements<1>(dst, dst_pitch, src, src_pitch, count);
    case 2:
      return copy_elements<2>(dst, dst_pitch, src, src_pitch, count);
    case 4:
      return copy_elements<4>(dst, dst_pitch, src, src_pitch, count);
    case 8:
      return copy_elements<8>(dst, dst_pitch, src, src_pitch, count);
    default:
      for (std::size_t k = 0; k < count; ++k)
        std::memcpy(dst + k * dst_pitch, src + k * src_pitch, size);
  }
}

class HostDevice : public Device {
 public:
  Backend backend() const override { return Backend::Host; }
  std::string name() const override { return name_; }
  std::vector<std::pair<std::string, std::string>> info() const override {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return {{"cpus", std::to_string(cpus)}};
  }

  ~HostDevice() override {
    for (auto& [data, m] : mappings_) {
      unregister_guard_page(static_cast<char*>(data) + m.data_bytes);
      munmap(m.base, m.length);
    }
  }

  // Plain allocations (the caller writes its guard pattern after the data) still end at a
  // guard page, past the pattern.
  void* alloc(std::size_t bytes) override { return map_guarded(bytes, "", false); }
  // A buffer's data ends exactly where the guard page starts: reading or writing one byte past
  // the end (a vector load over the tail, an off-by-one loop) is a SIGSEGV the crash handler
  // names, not a silent read of whatever follows. The data starts page-aligned minus its size,
  // so it is aligned to its element size (not to 64 bytes unless its size is a multiple of 64).
  void* alloc_buffer(const std::string& name, std::size_t bytes) override {
    return map_guarded(bytes, name, true);
  }
  bool page_guarded(const void* mem) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = mappings_.find(const_cast<void*>(mem));
    return it != mappings_.end() && it->second.page_guarded;
  }
  void release(void* mem) noexcept override {
    if (mem == nullptr) return;
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = mappings_.find(mem);
    if (it == mappings_.end()) return;
    unregister_guard_page(static_cast<char*>(mem) + it->second.data_bytes);
    munmap(it->second.base, it->second.length);
    mappings_.erase(it);
  }
  const void* host_view(void* mem) const override { return mem; }
  // Where a buffer lies moves a CPU kernel's time as well: map_host_aligned gives every process
  // the same cache-set bits, but the pages behind a buffer differ from process to process, and
  // the judge keeps its case for the whole job. On the 2-core VM under a CPU hog, with the
  // buffers kept, whole jobs of the reference against itself leaned one way (33 of 50 intervals
  // held 1.00); moved every batch, 41 of 45 did (bench/results/cpu/self_1207d/). The first call
  // on moved buffers is one a memo keyed on the pointers computes honestly: the checker gets one
  // such call and one of the others (Runner::benchmark_shape's picks).
  bool placement_varies() const override { return true; }

  void upload(void* mem, std::size_t offset, const void* src, std::size_t bytes) override {
    std::memcpy(static_cast<char*>(mem) + offset, src, bytes);
  }
  void download(void* mem, std::size_t offset, void* dst, std::size_t bytes) override {
    std::memcpy(dst, static_cast<const char*>(mem) + offset, bytes);
  }
  void upload_strided(void* mem, std::size_t offset, std::size_t pitch, const void* src,
                      std::size_t elem_bytes, std::size_t count) override {
    strided_copy(static_cast<char*>(mem) + offset, pitch, static_cast<const char*>(src), elem_bytes,
                 elem_bytes, count);
  }
  void download_strided(void* mem, std::size_t offset, std::size_t pitch, void* dst,
                        std::size_t elem_bytes, std::size_t count) override {
    strided_copy(static_cast<char*>(dst), elem_bytes, static_cast<const char*>(mem) + offset, pitch,
                 elem_bytes, count);
  }
  void copy(void* dst, const void* src, std::size_t offset, std::size_t bytes) override {
    std::memcpy(static_cast<char*>(dst) + offset, static_cast<const char*>(src) + offset, bytes);
  }
  void copy_strided(void* dst, const void* src, std::size_t offset, std::size_t pitch,
                    std::size_t elem_bytes, std::size_t count) override {
    strided_copy(static_cast<char*>(dst) + offset, pitch, static_cast<const char*>(src) + offset,
                 pitch, elem_bytes, count);
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
  // A cold call: every line of every buffer of the process's allocations is written back and
  // evicted from all cache levels of all cores, and the calling core's private caches are
  // overwritten. Where lines cannot be evicted one by one, twice the last-level cache is
  // overwritten instead, which costs far more (0.1-0.3 s a call where a VM reports the host's
  // whole L3 of hundreds of MiB) and leaves fewer pairs in the side-by-side time budget.
  void flush_caches() override {
    bool evicted = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const auto& [data, m] : mappings_)
        evicted = evict_host_lines(data, m.data_bytes) && evicted;
    }
    if (evicted) {
      flush_host_caches(flush_buffer_, private_flush_bytes());
    } else {
      flush_host_caches(flush_buffer_);
    }
  }
  // Only the call's buffers (Device::flush_caches_for); any that is not ours: everything.
  void flush_caches_for(const std::vector<void*>& buffers) override {
    bool evicted = true;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (void* mem : buffers) {
        auto it = mappings_.find(mem);
        evicted = it != mappings_.end() && evict_host_lines(mem, it->second.data_bytes) && evicted;
        if (!evicted) break;
      }
    }
    if (!evicted) return flush_caches();
    flush_host_caches(flush_buffer_, private_flush_bytes());
  }

  void begin_call() override { start_ = std::chrono::steady_clock::now(); }
  double end_call() override {
    auto end = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(end - start_).count();
  }

 private:
  struct Mapping {
    void* base = nullptr;
    std::size_t length = 0;
    std::size_t data_bytes = 0;
    bool page_guarded = false;  // no guard pattern between the data and the guard page
  };

  // mmap of the data rounded up to whole pages plus one PROT_NONE page; the data is placed at
  // the end of the readable pages.
  void* map_guarded(std::size_t bytes, const std::string& name, bool page_guarded) {
    static const std::size_t kPage = std::size_t(sysconf(_SC_PAGESIZE));
    std::size_t data_pages = (bytes + kPage - 1) / kPage * kPage;
    std::size_t length = data_pages + kPage;
    if (data_pages < bytes || length < data_pages)
      throw DeviceError("host allocation of " + std::to_string(bytes) + " bytes is too large");
    void* base = map_host_aligned(length);
    if (base == nullptr)
      throw DeviceError("host allocation of " + std::to_string(bytes) +
                        " bytes failed: " + std::strerror(errno));
    char* guard = static_cast<char*>(base) + data_pages;
    if (mprotect(guard, kPage, PROT_NONE) != 0) {
      int err = errno;
      munmap(base, length);
      throw DeviceError("cannot protect the guard page of a " + std::to_string(bytes) +
                        "-byte host buffer: " + std::strerror(err));
    }
    char* data = guard - bytes;
    register_guard_page(guard, kPage, name.empty() ? "(unnamed)" : name, bytes);
    std::lock_guard<std::mutex> lock(mutex_);
    mappings_[data] = Mapping{base, length, bytes, page_guarded};
    return data;
  }

  mutable std::mutex mutex_;
  std::unordered_map<void*, Mapping> mappings_;  // by data pointer
  std::string name_ = cpu_model_name();
  std::vector<unsigned char> flush_buffer_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace

std::unique_ptr<Device> make_host_device() {
  return std::make_unique<HostDevice>();
}

}  // namespace kernelfoundry
