// Backend selection and the host-side cache flush shared by the host and OpenCL backends.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "harness/device.h"

namespace kernelfoundry {

std::unique_ptr<Device> make_device(Backend backend, const DeviceOptions& options) {
  switch (backend) {
    case Backend::Host:
      return make_host_device();
    case Backend::OpenCL:
      return make_opencl_device(options);
    case Backend::CUDA:
      return make_cuda_device(options);
  }
  throw Error("unknown backend");
}

void Device::upload_strided(void* mem, std::size_t offset, std::size_t pitch, const void* src,
                            std::size_t elem_bytes, std::size_t count) {
  const char* from = static_cast<const char*>(src);
  for (std::size_t k = 0; k < count; ++k)
    upload(mem, offset + k * pitch, from + k * elem_bytes, elem_bytes);
}

void Device::download_strided(void* mem, std::size_t offset, std::size_t pitch, void* dst,
                              std::size_t elem_bytes, std::size_t count) {
  char* to = static_cast<char*>(dst);
  for (std::size_t k = 0; k < count; ++k)
    download(mem, offset + k * pitch, to + k * elem_bytes, elem_bytes);
}

void Device::copy(void* dst, const void* src, std::size_t offset, std::size_t bytes) {
  std::vector<unsigned char> host(bytes);
  download(const_cast<void*>(src), offset, host.data(), bytes);
  upload(dst, offset, host.data(), bytes);
}

void Device::copy_strided(void* dst, const void* src, std::size_t offset, std::size_t pitch,
                          std::size_t elem_bytes, std::size_t count) {
  std::vector<unsigned char> host(elem_bytes * count);
  download_strided(const_cast<void*>(src), offset, pitch, host.data(), elem_bytes, count);
  upload_strided(dst, offset, pitch, host.data(), elem_bytes, count);
}

// From 2 MiB up, backed by transparent huge pages where the kernel offers them (madvise mode):
// every process then lays out a buffer of a given size the same way down to its physical address
// bits 0-20, which pick the cache sets, so the candidate's child and the judge timing the
// reference see the same cache conflicts rather than two random page placements (on the 2-core
// VM, a steady 8% between two runs of one code under a CPU hog).
void* map_host_aligned(std::size_t length) {
  constexpr std::size_t kHuge = std::size_t(2) << 20;
  if (length < kHuge) {
    void* p = mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  std::size_t padded = length + kHuge;
  void* raw = mmap(nullptr, padded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  auto start = reinterpret_cast<std::uintptr_t>(raw);
  std::uintptr_t aligned = (start + kHuge - 1) & ~std::uintptr_t(kHuge - 1);
  if (aligned > start) munmap(raw, aligned - start);
  std::size_t tail = start + padded - (aligned + length);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
  void* p = reinterpret_cast<void*>(aligned);
  madvise(p, length, MADV_HUGEPAGE);  // advice only: ignored where THP is off
  return p;
}

std::size_t host_flush_bytes() {
  std::size_t bytes = std::size_t(64) << 20;
#ifdef _SC_LEVEL3_CACHE_SIZE
  long l3 = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (l3 > 0) bytes = std::max(bytes, std::size_t(l3) * 2);
#endif
  return bytes;
}

std::size_t private_flush_bytes() {
  std::size_t bytes = std::size_t(1) << 20;
#if defined(_SC_LEVEL1_DCACHE_SIZE) && defined(_SC_LEVEL2_CACHE_SIZE)
  long l1 = sysconf(_SC_LEVEL1_DCACHE_SIZE), l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (l1 > 0 && l2 > 0) bytes = std::max(bytes, 2 * (std::size_t(l1) + std::size_t(l2)));
#endif
  return bytes;
}

#if defined(__x86_64__)
__attribute__((target("clflushopt"))) static void evict_lines_clflushopt(const char* begin,
                                                                         const char* end) {
  for (const char* p = begin; p < end; p += 64) __builtin_ia32_clflushopt(p);
  __builtin_ia32_sfence();
}

static void evict_lines_clflush(const char* begin, const char* end) {
  for (const char* p = begin; p < end; p += 64) __builtin_ia32_clflush(p);
  __builtin_ia32_mfence();
}
#endif

bool evict_host_lines(const void* data, std::size_t bytes) {
#if defined(__x86_64__)
  if (bytes == 0) return true;
  auto first = reinterpret_cast<std::uintptr_t>(data) & ~std::uintptr_t(63);
  const char* begin = reinterpret_cast<const char*>(first);
  const char* end = static_cast<const char*>(data) + bytes;
  static const bool has_clflushopt = __builtin_cpu_supports("clflushopt");
  if (has_clflushopt) {
    evict_lines_clflushopt(begin, end);
  } else {
    evict_lines_clflush(begin, end);
  }
  return true;
#else
  (void)data;
  (void)bytes;
  return false;
#endif
}

void flush_host_caches(std::vector<unsigned char>& buffer, std::size_t bytes) {
  static unsigned char value = 0;
  if (buffer.empty()) buffer.resize(bytes);
  std::memset(buffer.data(), ++value, buffer.size());
  // Read one byte back through a volatile so the stores stay observable.
  volatile unsigned char sink = buffer[buffer.size() / 2];
  (void)sink;
}

}  // namespace kernelfoundry
