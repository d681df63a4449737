// CUPTI activity tracing through dlopen (no link-time dependency: a machine without libcupti keeps
// event timing) and the pure sample rules of cupti_timing.h.
#include "harness/cupti_timing.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#if defined(KF_HARNESS_CUDA) && __has_include(<cupti_activity.h>)
#include <cupti_activity.h>

#include <cstddef>
#define KF_HAVE_CUPTI_HEADER 1
#endif

namespace kernelfoundry {

std::uint64_t interval_union_ns(std::vector<Interval> intervals) {
  intervals.erase(std::remove_if(intervals.begin(), intervals.end(),
                                 [](const Interval& i) { return i.end <= i.start; }),
                  intervals.end());
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  std::uint64_t total = 0, run_start = 0, run_end = 0;
  bool open = false;
  for (const Interval& i : intervals) {
    if (open && i.start <= run_end) {
      run_end = std::max(run_end, i.end);
      continue;
    }
    if (open) total += run_end - run_start;
    run_start = i.start;
    run_end = i.end;
    open = true;
  }
  if (open) total += run_end - run_start;
  return total;
}

namespace {

std::string ms_text(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f ms", ms);
  return buf;
}

}  // namespace

CallRecords summarize_records(std::vector<Interval> intervals, std::uint64_t window_start,
                              std::uint64_t window_end, std::uint64_t stop_mark) {
  // Whole records, not clipped: a skew between the host's and the device's clocks must not shave
  // the call's last kernel.
  intervals.erase(std::remove_if(intervals.begin(), intervals.end(),
                                 [&](const Interval& i) {
                                   return i.end <= i.start || i.start < window_start ||
                                          i.start >= window_end;
                                 }),
                  intervals.end());
  CallRecords call;
  auto ms = [&](std::uint64_t t) {
    return t >= window_start ? double(t - window_start) * 1e-6 : -double(window_start - t) * 1e-6;
  };
  call.stop_ms = ms(stop_mark);
  call.records = intervals.size();
  if (intervals.empty()) return call;
  std::uint64_t first = intervals[0].start, last = intervals[0].end;
  for (const Interval& i : intervals) {
    first = std::min(first, i.start);
    last = std::max(last, i.end);
  }
  call.first_ms = ms(first);
  call.last_ms = ms(last);
  call.union_ms = double(interval_union_ns(std::move(intervals))) * 1e-6;
  return call;
}

TimedSample choose_sample(double event_ms, const CallRecords& call) {
  TimedSample s;
  s.ms = event_ms;
  const double union_ms = call.union_ms;
  if (call.records == 0 || union_ms <= 0) {
    s.note = "CUPTI saw no kernel, copy or memset in the call; the sample is the event time " +
             ms_text(event_ms);
    return s;
  }
  double between = std::max(0.0, call.last_ms - call.first_ms - union_ms);
  double after = std::max(0.0, event_ms - std::max(call.last_ms, call.stop_ms));
  double idle = between + after;
  if (idle > kIdleAllowanceMs + kIdleAllowanceFraction * union_ms) {
    s.note = "the device was idle or busy with unrecorded work for " + ms_text(idle) +
             " of the call's " + ms_text(event_ms) + " (" + ms_text(between) +
             " between its kernels and copies: host work, sleeps or waits between launches; " +
             ms_text(after) +
             " after the last one and after run() returned); the sample is the event time, not "
             "the kernels' " +
             ms_text(union_ms);
    return s;
  }
  if (union_ms > event_ms + kOverEventsAllowanceMs + kOverEventsAllowanceFraction * event_ms) {
    s.note = "CUPTI's records of the call add up to " + ms_text(union_ms) +
             ", more than the events saw (" + ms_text(event_ms) + "); the sample is the event time";
    return s;
  }
  s.ms = union_ms;
  s.cupti = true;
  return s;
}

namespace {

// The slice of the CUPTI ABI this file uses (declared here so nothing needs CUPTI's headers or
// library at build time; checked against the headers when they are there).
using CuptiResult = int;
using CuptiKind = int;
constexpr CuptiKind kKindMemcpy = 1, kKindMemset = 2, kKindKernel = 3, kKindConcurrentKernel = 10,
                    kKindCdpKernel = 18, kKindMemcpy2 = 22;
// Kernel, memcpy, peer memcpy and memset records all hold their uint64 start and end (ns) at
// these offsets (every record version since CUDA 6).
constexpr std::size_t kStartOffset = 16, kEndOffset = 24;
constexpr CuptiResult kSuccess = 0, kMaxLimitReached = 12;

#ifdef KF_HAVE_CUPTI_HEADER
static_assert(CUPTI_ACTIVITY_KIND_MEMCPY == kKindMemcpy &&
                  CUPTI_ACTIVITY_KIND_MEMSET == kKindMemset &&
                  CUPTI_ACTIVITY_KIND_KERNEL == kKindKernel &&
                  CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL == kKindConcurrentKernel &&
                  CUPTI_ACTIVITY_KIND_CDP_KERNEL == kKindCdpKernel &&
                  CUPTI_ACTIVITY_KIND_MEMCPY2 == kKindMemcpy2,
              "CUPTI activity kinds moved");
static_assert(CUPTI_SUCCESS == kSuccess && CUPTI_ERROR_MAX_LIMIT_REACHED == kMaxLimitReached,
              "CUPTI result codes moved");
static_assert(offsetof(CUpti_ActivityKernel10, start) == kStartOffset &&
                  offsetof(CUpti_ActivityKernel10, end) == kEndOffset &&
                  offsetof(CUpti_ActivityMemcpy6, start) == kStartOffset &&
                  offsetof(CUpti_ActivityMemcpy6, end) == kEndOffset &&
                  offsetof(CUpti_ActivityMemcpyPtoP4, start) == kStartOffset &&
                  offsetof(CUpti_ActivityMemcpyPtoP4, end) == kEndOffset &&
                  offsetof(CUpti_ActivityMemset4, start) == kStartOffset &&
                  offsetof(CUpti_ActivityMemset4, end) == kEndOffset,
              "CUPTI record layout moved");
#endif

using RequestFn = void (*)(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
using CompleteFn = void (*)(void* context, std::uint32_t stream, std::uint8_t* buffer,
                            std::size_t size, std::size_t valid);

struct Api {
  CuptiResult (*enable)(CuptiKind) = nullptr;
  CuptiResult (*disable)(CuptiKind) = nullptr;
  CuptiResult (*flush_all)(std::uint32_t) = nullptr;
  CuptiResult (*next_record)(std::uint8_t*, std::size_t, void**) = nullptr;
  CuptiResult (*register_callbacks)(RequestFn, CompleteFn) = nullptr;
  CuptiResult (*dropped)(void*, std::uint32_t, std::size_t*) = nullptr;
  CuptiResult (*timestamp)(std::uint64_t*) = nullptr;
  CuptiResult (*result_string)(CuptiResult, const char**) = nullptr;
};
Api api;

// Records delivered by CUPTI (from its own thread or from flush_all) since the last take.
struct Collected {
  std::mutex mutex;
  std::vector<Interval> intervals;
  std::size_t dropped = 0;
  bool bad_buffer = false;
};
Collected collected;

constexpr std::size_t kBufferBytes = std::size_t(1) << 20;

void buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  // Records are 8-byte aligned inside the buffer; CUPTI wants the buffer itself aligned too.
  *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void buffer_completed(void* context, std::uint32_t stream, std::uint8_t* buffer, std::size_t,
                      std::size_t valid) {
  std::vector<Interval> found;
  bool bad = false;
  void* record = nullptr;
  while (buffer != nullptr && valid > 0) {
    CuptiResult r = api.next_record(buffer, valid, &record);
    if (r == kMaxLimitReached) break;
    if (r != kSuccess) {
      bad = true;
      break;
    }
    CuptiKind kind = 0;
    std::memcpy(&kind, record, sizeof kind);
    if (kind == kKindConcurrentKernel || kind == kKindKernel || kind == kKindCdpKernel ||
        kind == kKindMemcpy || kind == kKindMemcpy2 || kind == kKindMemset) {
      Interval i;
      std::memcpy(&i.start, static_cast<const char*>(record) + kStartOffset, sizeof i.start);
      std::memcpy(&i.end, static_cast<const char*>(record) + kEndOffset, sizeof i.end);
      found.push_back(i);
    }
  }
  std::size_t dropped = 0;
  if (api.dropped(context, stream, &dropped) != kSuccess) dropped = 0;
  std::free(buffer);
  std::lock_guard<std::mutex> lock(collected.mutex);
  collected.intervals.insert(collected.intervals.end(), found.begin(), found.end());
  collected.dropped += dropped;
  collected.bad_buffer = collected.bad_buffer || bad;
}

// Folders that may hold libcupti, most specific first.
std::vector<std::string> search_dirs(const void* runtime_symbol) {
  std::vector<std::string> roots, dirs;
  Dl_info info;
  if (runtime_symbol != nullptr && dladdr(runtime_symbol, &info) != 0 && info.dli_fname) {
    std::string path = info.dli_fname;
    std::size_t slash = path.rfind('/');
    if (slash != std::string::npos) {
      dirs.push_back(path.substr(0, slash));  // a shared libcudart's folder: lib64 itself
      roots.push_back(path.substr(0, slash) + "/..");
    }
  }
  for (const char* var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"}) {
    if (const char* v = std::getenv(var); v != nullptr && *v != '\0') roots.push_back(v);
  }
  // The toolkit whose nvcc is on PATH (task binaries link the static runtime, so dladdr finds
  // the binary, not the toolkit).
  if (const char* path = std::getenv("PATH")) {
    std::string all = path;
    for (std::size_t at = 0; at <= all.size();) {
      std::size_t end = all.find(':', at);
      if (end == std::string::npos) end = all.size();
      std::string dir = all.substr(at, end - at);
      if (!dir.empty() && access((dir + "/nvcc").c_str(), X_OK) == 0) roots.push_back(dir + "/..");
      at = end + 1;
    }
  }
#ifdef KF_CUPTI_BUILD_DIR
  dirs.push_back(KF_CUPTI_BUILD_DIR);
#endif
  roots.push_back("/usr/local/cuda");
  for (const std::string& root : roots) {
    for (const char* sub : {"/lib64", "/lib", "/extras/CUPTI/lib64", "/targets/x86_64-linux/lib"})
      dirs.push_back(root + sub);
  }
  return dirs;
}

template <typename Fn>
bool bind(void* lib, const char* name, Fn* fn, std::string* missing) {
  *fn = reinterpret_cast<Fn>(dlsym(lib, name));
  if (*fn == nullptr && missing->empty()) *missing = name;
  return *fn != nullptr;
}

}  // namespace

std::vector<std::string> cupti_library_candidates(const void* runtime_symbol) {
  std::vector<std::string> names = {"libcupti.so.13", "libcupti.so"};
  for (const std::string& dir : search_dirs(runtime_symbol)) {
    names.push_back(dir + "/libcupti.so.13");
    names.push_back(dir + "/libcupti.so");
  }
  return names;
}

CuptiTimer& CuptiTimer::instance() {
  static CuptiTimer timer;
  return timer;
}

bool CuptiTimer::fail(const std::string& what, int result) {
  const char* text = nullptr;
  std::string why = what + " failed";
  if (api.result_string != nullptr && api.result_string(result, &text) == kSuccess && text)
    why += std::string(": ") + text;
  else
    why += " (CUPTI error " + std::to_string(result) + ")";
  why_not_ = why;
  return false;
}

bool CuptiTimer::load(const void* runtime_symbol) {
  if (tried_) return loaded_;
  tried_ = true;
  if (const char* off = std::getenv("KF_HARNESS_NO_CUPTI"); off && *off && std::strcmp(off, "0")) {
    why_not_ = "KF_HARNESS_NO_CUPTI is set";
    return false;
  }
  void* lib = nullptr;
  for (const std::string& name : cupti_library_candidates(runtime_symbol)) {
    lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib != nullptr) {
      library_ = name;
      break;
    }
  }
  if (lib == nullptr) {
    why_not_ =
        "libcupti not found (tried libcupti.so.13 on the loader path and in the CUDA toolkit's "
        "lib64; set CUDA_HOME to the toolkit to use it)";
    return false;
  }
  std::string missing;
  bool all = bind(lib, "cuptiActivityEnable", &api.enable, &missing);
  all = bind(lib, "cuptiActivityDisable", &api.disable, &missing) && all;
  all = bind(lib, "cuptiActivityFlushAll", &api.flush_all, &missing) && all;
  all = bind(lib, "cuptiActivityGetNextRecord", &api.next_record, &missing) && all;
  all = bind(lib, "cuptiActivityRegisterCallbacks", &api.register_callbacks, &missing) && all;
  all = bind(lib, "cuptiActivityGetNumDroppedRecords", &api.dropped, &missing) && all;
  all = bind(lib, "cuptiGetTimestamp", &api.timestamp, &missing) && all;
  all = bind(lib, "cuptiGetResultString", &api.result_string, &missing) && all;
  if (!all) {
    why_not_ = library_ + " lacks " + missing;
    return false;
  }
  if (CuptiResult r = api.register_callbacks(buffer_requested, buffer_completed); r != kSuccess)
    return fail("cuptiActivityRegisterCallbacks", r);
  // Enabled once for the life of the process, not around each call: on an H200 each enable made
  // the next launch about 100 us slower, which the events then saw. start()/stop() pick the
  // call's records by time instead.
  // The serialised kernel records (kernels one at a time, as under Nsight Compute): on an H100
  // the concurrent ones read short kernels 8-11% below ncu's gpu__time_duration, these within 3%
  // (bench/README.md). KF_HARNESS_CUPTI_SERIAL=0 takes the concurrent ones (docs/harness.md).
  const char* serial = std::getenv("KF_HARNESS_CUPTI_SERIAL");
  const CuptiKind kernels =
      serial && std::strcmp(serial, "0") == 0 ? kKindConcurrentKernel : kKindKernel;
  for (CuptiKind kind : {kernels, kKindMemcpy, kKindMemset, kKindMemcpy2}) {
    if (CuptiResult r = api.enable(kind); r != kSuccess) {
      for (CuptiKind k : {kernels, kKindMemcpy, kKindMemset, kKindMemcpy2}) api.disable(k);
      return fail("cuptiActivityEnable(" + std::to_string(kind) + ")", r);
    }
  }
  records_ =
      kernels == kKindConcurrentKernel ? "concurrent kernel records" : "serialised kernel records";
  loaded_ = true;
  return true;
}

bool CuptiTimer::start() {
  if (!loaded_ || active_) return active_;
  // The device is idle (the caller synchronised): every record of the call starts after this.
  if (CuptiResult r = api.timestamp(&window_start_); r != kSuccess) {
    loaded_ = false;
    return fail("cuptiGetTimestamp", r);
  }
  stop_mark_ = window_start_;
  active_ = true;
  return true;
}

void CuptiTimer::mark_stop() {
  if (active_ && api.timestamp(&stop_mark_) != kSuccess) stop_mark_ = window_start_;
}

bool CuptiTimer::stop(CallRecords* call, std::string* problem) {
  *call = CallRecords{};
  if (!active_) return false;
  active_ = false;
  std::uint64_t window_end = UINT64_MAX;
  if (api.timestamp(&window_end) != kSuccess) window_end = UINT64_MAX;
  // The device has synchronised, so every record of the call is complete: a plain flush hands
  // them all over (a forced one could hand over records without timestamps).
  CuptiResult flushed = api.flush_all(0);
  std::vector<Interval> intervals;
  std::size_t dropped = 0;
  bool bad_buffer = false;
  {
    std::lock_guard<std::mutex> lock(collected.mutex);
    intervals.swap(collected.intervals);
    dropped = collected.dropped;
    bad_buffer = collected.bad_buffer;
    collected.dropped = 0;
    collected.bad_buffer = false;
  }
  if (flushed != kSuccess) {
    loaded_ = false;
    fail("cuptiActivityFlushAll", flushed);
    *problem = "CUPTI stopped working (" + why_not_ + "); event timing from here on";
    return false;
  }
  if (dropped > 0 || bad_buffer) {
    *problem = dropped > 0 ? "CUPTI dropped " + std::to_string(dropped) + " activity records"
                           : "CUPTI handed over an unreadable record buffer";
    return false;
  }
  // The call's records are those that started inside its window: the L2 flush, the
  // perturbation's copies and every other harness step ran before it (the device was idle).
  *call = summarize_records(std::move(intervals), window_start_, window_end, stop_mark_);
  return true;
}

}  // namespace kernelfoundry
