// The CUDA backend (runtime host API only, so the host compiler builds it): cudaMalloc'd buffers,
// kernel-exact timing from CUPTI activity records (cupti_timing.h) with event timing on the
// default stream as the fallback and cross-check, and an L2 flush (a read kernel, from PTX)
// before cold samples.
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "harness/cupti_timing.h"
#include "harness/device.h"

namespace kernelfoundry {
namespace {

std::string cuda_error_text(cudaError_t err) {
  return std::string(cudaGetErrorString(err)) + " (" + cudaGetErrorName(err) + ")";
}

void check_cuda(cudaError_t err, const char* call, const char* file, int line) {
  if (err == cudaSuccess) return;
  const char* base = std::strrchr(file, '/');
  throw DeviceError(std::string(call) + " failed: " + cuda_error_text(err) + " (" +
                    (base ? base + 1 : file) + ":" + std::to_string(line) + ")");
}
#define KF_CUDA_CHECK(call) check_cuda((call), #call, __FILE__, __LINE__)

// The cache flush kernel, in PTX so that the host compiler can build this file: a grid-stride
// read of the flush buffer (16 bytes per thread per step), folded into a value that is stored
// only if it equals a constant the buffer never produces (so the loads cannot be dropped).
// Reading rather than writing leaves the L2 full of clean lines, like ncu's cache control; a
// memset would leave dirty lines whose write-back the next timed kernel would pay for.
const char kFlushPtx[] = R"PTX(
.version 7.0
.target sm_75
.address_size 64

.visible .entry kf_flush_read(.param .u64 base, .param .u64 count, .param .u64 sink)
{
  .reg .pred %p<3>;
  .reg .b32 %r<12>;
  .reg .b64 %rd<10>;
  ld.param.u64 %rd1, [base];
  ld.param.u64 %rd2, [count];
  ld.param.u64 %rd3, [sink];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd3, %rd3;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd4, %r1, %r2;
  cvt.u64.u32 %rd5, %r3;
  add.u64 %rd4, %rd4, %rd5;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd6, %r4, %r2;
  mov.u32 %r9, 0;
LOOP:
  setp.ge.u64 %p1, %rd4, %rd2;
  @%p1 bra DONE;
  shl.b64 %rd7, %rd4, 4;
  add.u64 %rd8, %rd1, %rd7;
  ld.global.v4.u32 {%r5, %r6, %r7, %r8}, [%rd8];
  xor.b32 %r9, %r9, %r5;
  xor.b32 %r9, %r9, %r6;
  xor.b32 %r9, %r9, %r7;
  xor.b32 %r9, %r9, %r8;
  add.u64 %rd4, %rd4, %rd6;
  bra LOOP;
DONE:
  setp.ne.u32 %p2, %r9, -1640531527;
  @%p2 bra END;
  st.global.u32 [%rd3], %r9;
END:
  ret;
}
)PTX";

// Strided copies for the perturbation before every timed call: element k of a packed buffer to
// (scatter != 0) or from base + k * pitch, `elem` bytes each (a grid-stride loop, one element per
// thread per step).
const char kStridedPtx[] = R"PTX(
.version 7.0
.target sm_75
.address_size 64

.visible .entry kf_strided_copy(.param .u64 base, .param .u64 packed, .param .u64 pitch,
                                .param .u64 elem, .param .u64 count, .param .u32 scatter)
{
  .reg .pred %p<4>;
  .reg .b16 %rs<2>;
  .reg .b32 %r<6>;
  .reg .b64 %rd<16>;
  ld.param.u64 %rd1, [base];
  ld.param.u64 %rd2, [packed];
  ld.param.u64 %rd3, [pitch];
  ld.param.u64 %rd4, [elem];
  ld.param.u64 %rd5, [count];
  ld.param.u32 %r5, [scatter];
  setp.ne.u32 %p3, %r5, 0;
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %ctaid.x;
  mov.u32 %r2, %ntid.x;
  mov.u32 %r3, %tid.x;
  mul.wide.u32 %rd6, %r1, %r2;
  cvt.u64.u32 %rd7, %r3;
  add.u64 %rd6, %rd6, %rd7;
  mov.u32 %r4, %nctaid.x;
  mul.wide.u32 %rd8, %r4, %r2;
LOOP:
  setp.ge.u64 %p1, %rd6, %rd5;
  @%p1 bra DONE;
  mul.lo.u64 %rd9, %rd6, %rd3;
  add.u64 %rd9, %rd1, %rd9;
  mul.lo.u64 %rd10, %rd6, %rd4;
  add.u64 %rd10, %rd2, %rd10;
  selp.b64 %rd14, %rd10, %rd9, %p3;
  selp.b64 %rd15, %rd9, %rd10, %p3;
  mov.u64 %rd11, 0;
BYTES:
  setp.ge.u64 %p2, %rd11, %rd4;
  @%p2 bra NEXT;
  add.u64 %rd12, %rd14, %rd11;
  ld.global.u8 %rs1, [%rd12];
  add.u64 %rd13, %rd15, %rd11;
  st.global.u8 [%rd13], %rs1;
  add.u64 %rd11, %rd11, 1;
  bra BYTES;
NEXT:
  add.u64 %rd6, %rd6, %rd8;
  bra LOOP;
DONE:
  ret;
}
)PTX";

class CudaDevice : public Device {
 public:
  explicit CudaDevice(bool under_profiler) : under_profiler_(under_profiler) {
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
      throw Error("no CUDA device: " +
                  (err != cudaSuccess ? cuda_error_text(err) : std::string("none visible")));
    }
    KF_CUDA_CHECK(cudaGetDevice(&device_));
    cudaDeviceProp prop;
    KF_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
    name_ = prop.name;
    arch_ = "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
    int l2 = 0;
    cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device_);
    l2_bytes_ = static_cast<std::size_t>(std::max(l2, 0));
    sm_count_ = prop.multiProcessorCount;
    max_threads_per_block_ = prop.maxThreadsPerBlock;
    shared_bytes_per_block_ = std::max(prop.sharedMemPerBlock, prop.sharedMemPerBlockOptin);
    global_mem_bytes_ = prop.totalGlobalMem;
    KF_CUDA_CHECK(cudaFree(nullptr));  // creates the context now, not inside the first sample
    KF_CUDA_CHECK(cudaEventCreate(&start_));
    KF_CUDA_CHECK(cudaEventCreate(&stop_));
    KF_CUDA_CHECK(cudaEventCreate(&tail_));
    calibrate_tail();
    // Kernel-exact timing where libcupti loads; events otherwise (info() says which and why).
    // Under a profiler (ncu) the profiler is the process's only CUPTI client.
    if (!under_profiler_ &&
        CuptiTimer::instance().load(reinterpret_cast<const void*>(&cudaGetDeviceCount)))
      cupti_ = &CuptiTimer::instance();
  }
  ~CudaDevice() override {
    if (flush_mem_) cudaFree(flush_mem_);
    if (flush_library_) cudaLibraryUnload(flush_library_);
    if (staging_mem_) cudaFree(staging_mem_);
    if (strided_library_) cudaLibraryUnload(strided_library_);
    cudaEventDestroy(start_);
    cudaEventDestroy(stop_);
    cudaEventDestroy(tail_);
  }

  Backend backend() const override { return Backend::CUDA; }
  std::string name() const override { return name_; }
  std::vector<std::pair<std::string, std::string>> info() const override {
    int runtime = 0, driver = 0;
    cudaRuntimeGetVersion(&runtime);
    cudaDriverGetVersion(&driver);
    // The limits with the names the OpenCL backend uses (arch/arch.h: FoundDevice reads them).
    return {{"arch", arch_},
            {"l2_bytes", std::to_string(l2_bytes_)},
            {"compute_units", std::to_string(sm_count_)},
            {"max_threads_per_group", std::to_string(max_threads_per_block_)},
            {"local_mem_bytes", std::to_string(shared_bytes_per_block_)},
            {"global_mem_bytes", std::to_string(global_mem_bytes_)},
            {"cuda_runtime", std::to_string(runtime)},
            {"cuda_driver", std::to_string(driver)},
            {"timer", cupti_ != nullptr && cupti_->loaded()
                          ? "cupti (" + cupti_->library() + ", " + cupti_->records() + ")"
                      : under_profiler_ ? std::string("events (under a profiler)")
                                        : "events (" + CuptiTimer::instance().why_not() + ")"}};
  }

  void* alloc(std::size_t bytes) override {
    void* p = nullptr;
    cudaError_t err = cudaMalloc(&p, std::max<std::size_t>(bytes, 1));
    if (err != cudaSuccess) {
      cudaGetLastError();  // a caller that recovers must not see it again as run()'s error
      throw DeviceError("cudaMalloc(" + std::to_string(bytes) +
                        " bytes) failed: " + cuda_error_text(err));
    }
    return p;
  }
  void release(void* mem) noexcept override {
    if (mem) cudaFree(mem);
  }
  // Under compute-sanitizer (the evaluator's pass sets KF_HARNESS_NO_GUARD_BYTES=1) a buffer's
  // allocation ends with its data: a read or write one element past the end then leaves the
  // allocation, which memcheck reports; guard bytes would hide the read. page_guarded() tells the
  // guard checks there is no pattern to check.
  void* alloc_buffer(const std::string& name, std::size_t bytes) override {
    return exact_buffers_ ? alloc(bytes) : Device::alloc_buffer(name, bytes);
  }
  bool page_guarded(const void*) const override { return exact_buffers_; }
  bool placement_varies() const override { return true; }

  void upload(void* mem, std::size_t offset, const void* src, std::size_t bytes) override {
    if (bytes == 0) return;
    KF_CUDA_CHECK(cudaMemcpy(static_cast<char*>(mem) + offset, src, bytes, cudaMemcpyHostToDevice));
  }
  void download(void* mem, std::size_t offset, void* dst, std::size_t bytes) override {
    if (bytes == 0) return;
    KF_CUDA_CHECK(
        cudaMemcpy(dst, static_cast<const char*>(mem) + offset, bytes, cudaMemcpyDeviceToHost));
  }
  // 2D copies: each element is one row of elem_bytes, rows `pitch` apart on the device and
  // packed on the host.
  // The packed elements go through a device staging buffer, spread or collected by a kernel:
  // cudaMemcpy2D with rows of one element costs about as much per element as a whole copy.
  void upload_strided(void* mem, std::size_t offset, std::size_t pitch, const void* src,
                      std::size_t elem_bytes, std::size_t count) override {
    if (count == 0) return;
    char* base = static_cast<char*>(mem) + offset;
    if (!strided_kernels_ready()) {
      KF_CUDA_CHECK(
          cudaMemcpy2D(base, pitch, src, elem_bytes, elem_bytes, count, cudaMemcpyHostToDevice));
      return;
    }
    void* packed = staging(elem_bytes * count);
    KF_CUDA_CHECK(cudaMemcpy(packed, src, elem_bytes * count, cudaMemcpyHostToDevice));
    launch_strided(base, packed, pitch, elem_bytes, count, /*scatter=*/true);
    KF_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  void download_strided(void* mem, std::size_t offset, std::size_t pitch, void* dst,
                        std::size_t elem_bytes, std::size_t count) override {
    if (count == 0) return;
    char* base = static_cast<char*>(mem) + offset;
    if (!strided_kernels_ready()) {
      KF_CUDA_CHECK(
          cudaMemcpy2D(dst, elem_bytes, base, pitch, elem_bytes, count, cudaMemcpyDeviceToHost));
      return;
    }
    void* packed = staging(elem_bytes * count);
    launch_strided(base, packed, pitch, elem_bytes, count, /*scatter=*/false);
    KF_CUDA_CHECK(cudaMemcpy(dst, packed, elem_bytes * count, cudaMemcpyDeviceToHost));
  }
  void copy(void* dst, const void* src, std::size_t offset, std::size_t bytes) override {
    if (bytes == 0) return;
    KF_CUDA_CHECK(cudaMemcpy(static_cast<char*>(dst) + offset,
                             static_cast<const char*>(src) + offset, bytes,
                             cudaMemcpyDeviceToDevice));
  }
  // Collected from src into the staging buffer, spread from it into dst: two launches, nothing
  // through the host.
  void copy_strided(void* dst, const void* src, std::size_t offset, std::size_t pitch,
                    std::size_t elem_bytes, std::size_t count) override {
    if (count == 0) return;
    if (!strided_kernels_ready()) {
      KF_CUDA_CHECK(cudaMemcpy2D(static_cast<char*>(dst) + offset, pitch,
                                 static_cast<const char*>(src) + offset, pitch, elem_bytes, count,
                                 cudaMemcpyDeviceToDevice));
      return;
    }
    void* packed = staging(elem_bytes * count);
    launch_strided(const_cast<char*>(static_cast<const char*>(src)) + offset, packed, pitch,
                   elem_bytes, count, /*scatter=*/false);
    launch_strided(static_cast<char*>(dst) + offset, packed, pitch, elem_bytes, count,
                   /*scatter=*/true);
    KF_CUDA_CHECK(cudaStreamSynchronize(nullptr));
  }
  void fill(void* mem, std::size_t offset, const void* pattern, std::size_t pattern_bytes,
            std::size_t bytes) override {
    if (bytes == 0) return;
    char* dst = static_cast<char*>(mem) + offset;
    const unsigned char* p = static_cast<const unsigned char*>(pattern);
    if (std::all_of(p, p + pattern_bytes, [&](unsigned char b) { return b == p[0]; })) {
      KF_CUDA_CHECK(cudaMemset(dst, p[0], bytes));
      return;
    }
    // The runtime API has no multi-byte memset: upload one block, then double it on the device.
    std::size_t block = std::min(
        bytes, std::max<std::size_t>(pattern_bytes, 1 << 16) / pattern_bytes * pattern_bytes);
    std::vector<unsigned char> host(block);
    for (std::size_t i = 0; i < block; i += pattern_bytes) std::memcpy(&host[i], p, pattern_bytes);
    upload(dst, 0, host.data(), block);
    for (std::size_t done = block; done < bytes; done *= 2) {
      KF_CUDA_CHECK(
          cudaMemcpy(dst + done, dst, std::min(done, bytes - done), cudaMemcpyDeviceToDevice));
    }
  }
  void synchronize() override { KF_CUDA_CHECK(cudaDeviceSynchronize()); }

  void flush_caches() override {
    // >= 2x L2 and >= 256 MiB, like KernelBench; persisting L2 lines are reset too.
    std::size_t bytes = std::max<std::size_t>(std::size_t(256) << 20, 2 * l2_bytes_);
    if (flush_mem_ == nullptr) {
      flush_mem_ = alloc(bytes);
      KF_CUDA_CHECK(cudaMemset(flush_mem_, 0, bytes));
      load_flush_kernel();
    }
    KF_CUDA_CHECK(cudaCtxResetPersistingL2Cache());
    if (flush_kernel_ != nullptr) {
      void* base = flush_mem_;
      unsigned long long count = bytes / 16;
      void* sink = flush_mem_;
      void* args[] = {&base, &count, &sink};
      KF_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(flush_kernel_),
                                     dim3(unsigned(std::max(sm_count_, 1) * 4)), dim3(512), args, 0,
                                     nullptr));
    } else {  // no PTX JIT (should not happen): a write flush, which leaves dirty lines
      KF_CUDA_CHECK(cudaMemsetAsync(flush_mem_, ++flush_value_, bytes, nullptr));
    }
    // No synchronise here (begin_call waits when CUPTI traces the call): without CUPTI the start
    // event is recorded behind the still-running flush, so it fires when the device turns to the
    // call, not while the host is still launching it (an idle device would add the launch
    // latency, several microseconds, to every sample).
  }

  void begin_call() override {
    if (cupti_ != nullptr && cupti_->loaded()) {
      // The call's window opens on an idle device: the L2 flush still running (see flush_caches)
      // and the perturbation's copies are not the call's work. The start event, now recorded on
      // an idle device, also counts the first launch's latency: the cross-check leaves that
      // lead-in out (cupti_timing.h).
      // The window opens before the start event is recorded, so it cannot open after the event
      // fired (a host stall there would count as the call's idle time).
      KF_CUDA_CHECK(cudaDeviceSynchronize());
      if (!cupti_->start()) cupti_note_ = "CUPTI stopped working (" + cupti_->why_not() + ")";
    }
    if (profile_next_) {
      profile_next_ = false;
      in_profile_range_ = cudaProfilerStart() == cudaSuccess;
    }
    KF_CUDA_CHECK(cudaEventRecord(start_, nullptr));
  }

  void profile_next_call() override { profile_next_ = true; }

  double end_call() override {
    cudaError_t launch = cudaGetLastError();  // launch errors of run()'s kernels
    // The stop event on the legacy default stream waits for every blocking stream; the device-wide
    // synchronise that follows also waits for non-blocking ones, and the tail event shows whether
    // work was still running after the stop event (then the sample covers it, see below).
    cudaError_t rec = cudaEventRecord(stop_, nullptr);
    if (cupti_ != nullptr) cupti_->mark_stop();  // after the record: run() had returned by then
    cudaError_t sync = cudaDeviceSynchronize();
    if (in_profile_range_) {
      in_profile_range_ = false;
      cudaProfilerStop();
    }
    cudaError_t tail = cudaEventRecord(tail_, nullptr);
    if (tail == cudaSuccess) tail = cudaEventSynchronize(tail_);
    CallRecords records;
    std::string problem;
    bool traced = cupti_ != nullptr && cupti_->active() && cupti_->stop(&records, &problem);
    if (launch != cudaSuccess)
      throw DeviceError("CUDA error from run(): " + cuda_error_text(launch));
    if (sync != cudaSuccess) {
      throw DeviceError("CUDA error while run()'s work executed: " + cuda_error_text(sync));
    }
    KF_CUDA_CHECK(rec);
    KF_CUDA_CHECK(tail);
    float ms = 0, gap = 0, whole = 0;
    KF_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    KF_CUDA_CHECK(cudaEventElapsedTime(&gap, stop_, tail_));
    KF_CUDA_CHECK(cudaEventElapsedTime(&whole, start_, tail_));
    if (gap > tail_baseline_ms_ + std::max(0.05, 0.1 * ms)) {
      // Work outside the default stream ended after the stop event: count it.
      side_stream_note_ = "work not ordered with the default stream ran " +
                          std::to_string(gap - tail_baseline_ms_) +
                          " ms past the stop event; the sample includes it";
      return with_records(std::max(double(ms), double(whole) - tail_baseline_ms_), traced, records,
                          problem);
    }
    return with_records(ms, traced, records, problem);
  }

  std::string take_timing_note() override {
    std::string note;
    note.swap(side_stream_note_);
    return note;
  }
  std::string take_timer_note() override {
    std::string note;
    note.swap(cupti_note_);
    return note;
  }
  std::string last_timer() const override { return last_timer_; }

 private:
  // The call's sample from its event time and, where CUPTI traced it, its records
  // (cupti_timing.h: the union, unless the events saw the device idle inside the call).
  double with_records(double events_ms, bool traced, const CallRecords& records,
                      const std::string& problem) {
    last_timer_ = "events";
    if (!traced) {
      if (!problem.empty()) cupti_note_ = problem + "; the sample is the event time";
      return events_ms;
    }
    TimedSample sample = choose_sample(events_ms, records);
    cupti_note_ = sample.note;
    if (sample.cupti) last_timer_ = "cupti";
    return sample.ms;
  }

  // The stop->tail gap of an empty call: the synchronise round trip, subtracted from samples
  // that include side-stream work.
  void calibrate_tail() {
    std::vector<float> gaps;
    for (int i = 0; i < 5; ++i) {
      KF_CUDA_CHECK(cudaEventRecord(start_, nullptr));
      KF_CUDA_CHECK(cudaEventRecord(stop_, nullptr));
      KF_CUDA_CHECK(cudaDeviceSynchronize());
      KF_CUDA_CHECK(cudaEventRecord(tail_, nullptr));
      KF_CUDA_CHECK(cudaEventSynchronize(tail_));
      float gap = 0;
      KF_CUDA_CHECK(cudaEventElapsedTime(&gap, stop_, tail_));
      gaps.push_back(gap);
    }
    std::sort(gaps.begin(), gaps.end());
    tail_baseline_ms_ = gaps[gaps.size() / 2];
  }

  bool strided_kernels_ready() {
    if (!strided_tried_) {
      strided_tried_ = true;
      cudaLibrary_t library = nullptr;
      if (cudaLibraryLoadData(&library, kStridedPtx, nullptr, nullptr, 0, nullptr, nullptr, 0) ==
              cudaSuccess &&
          cudaLibraryGetKernel(&strided_kernel_, library, "kf_strided_copy") == cudaSuccess) {
        strided_library_ = library;
      } else {
        cudaGetLastError();  // clear it; the rectangular copies do the work
      }
    }
    return strided_library_ != nullptr;
  }

  void* staging(std::size_t bytes) {
    if (bytes > staging_bytes_) {
      if (staging_mem_) cudaFree(staging_mem_);
      staging_mem_ = nullptr;
      staging_bytes_ = 0;
      KF_CUDA_CHECK(cudaMalloc(&staging_mem_, bytes));
      staging_bytes_ = bytes;
    }
    return staging_mem_;
  }

  void launch_strided(char* base, void* packed, std::size_t pitch, std::size_t elem_bytes,
                      std::size_t count, bool scatter) {
    unsigned long long b = reinterpret_cast<unsigned long long>(base),
                       p = reinterpret_cast<unsigned long long>(packed), pi = pitch, e = elem_bytes,
                       n = count;
    unsigned to_base = scatter ? 1 : 0;
    void* args[] = {&b, &p, &pi, &e, &n, &to_base};
    unsigned blocks = unsigned(
        std::min<std::size_t>((count + 255) / 256, std::size_t(std::max(sm_count_, 1)) * 8));
    KF_CUDA_CHECK(cudaLaunchKernel(reinterpret_cast<const void*>(strided_kernel_), dim3(blocks),
                                   dim3(256), args, 0, nullptr));
  }

  void load_flush_kernel() {
    cudaLibrary_t library = nullptr;
    cudaKernel_t kernel = nullptr;
    if (cudaLibraryLoadData(&library, kFlushPtx, nullptr, nullptr, 0, nullptr, nullptr, 0) ==
            cudaSuccess &&
        cudaLibraryGetKernel(&kernel, library, "kf_flush_read") == cudaSuccess) {
      flush_library_ = library;
      flush_kernel_ = kernel;
    } else {
      cudaGetLastError();  // clear it; flush_caches falls back to a memset
    }
  }

  int device_ = 0;
  int sm_count_ = 0;
  cudaLibrary_t flush_library_ = nullptr;
  cudaKernel_t flush_kernel_ = nullptr;
  bool strided_tried_ = false;
  cudaLibrary_t strided_library_ = nullptr;
  cudaKernel_t strided_kernel_ = nullptr;
  void* staging_mem_ = nullptr;
  std::size_t staging_bytes_ = 0;
  std::string name_, arch_;
  std::size_t l2_bytes_ = 0;
  int max_threads_per_block_ = 0;
  std::size_t shared_bytes_per_block_ = 0, global_mem_bytes_ = 0;
  cudaEvent_t start_ = nullptr, stop_ = nullptr, tail_ = nullptr;
  double tail_baseline_ms_ = 0;
  std::string side_stream_note_;
  CuptiTimer* cupti_ = nullptr;  // set when libcupti loaded
  std::string cupti_note_;       // why the last call's sample is the event time despite CUPTI
  std::string last_timer_;
  void* flush_mem_ = nullptr;
  unsigned char flush_value_ = 0;
  const bool exact_buffers_ = std::getenv("KF_HARNESS_NO_GUARD_BYTES") != nullptr;
  const bool under_profiler_;
  bool profile_next_ = false, in_profile_range_ = false;
};

}  // namespace

std::unique_ptr<Device> make_cuda_device(const DeviceOptions& options) {
  return std::make_unique<CudaDevice>(options.under_profiler);
}

}  // namespace kernelfoundry
