// KernelFoundry native harness: the API a task's task.cpp is written against (DESIGN.md §5).
// C++17. Link one flavour: kf_harness_host, kf_harness_opencl (+ -lOpenCL) or kf_harness_cuda.
//
//   #include <kernelfoundry/harness.h>
//   namespace kf = kernelfoundry;
//   struct Scale : kf::Problem {
//     void setup(kf::Case& c) override {               // once per (shape, seed)
//       c.input("x", kf::f32, c.dim("n"), kf::normal(0, 1));
//       c.output("y", kf::f32, c.dim("n"), kf::tolerance(1e-5, 1e-7));
//     }
//     void run(kf::Case& c, kf::Impl impl) override {   // candidate or reference
//       const float* x = c.buffer("x").host<const float>();
//       float* y = c.buffer("y").host<float>();
//       (impl == kf::Impl::Reference ? scale_ref : scale)(x, y, c.dim("n"));
//     }
//   };
//   int main(int argc, char** argv) {
//     Scale p;
//     return kf::main(argc, argv, p, kf::Backend::Host, {{{"n", 7}}, {{"n", 1000}}},
//                     kf::benchmark("scale", {{{"n", 1 << 20}}}));
//   }
//
// The harness owns everything else: allocation with guard bytes, seeded inputs, a separate
// output set per implementation, poisoning, input checksums, comparisons, timing, the run
// protocol (`task_bin --help`) and the result JSON.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kernelfoundry/compare.h"
#include "kernelfoundry/dtype.h"

// OpenCL handle types, declared the way CL/cl.h does so no OpenCL header is needed here:
// `_cl_mem*` is `cl_mem`, `_cl_kernel*` is `cl_kernel`, and so on.
struct _cl_mem;
struct _cl_kernel;
struct _cl_context;
struct _cl_command_queue;
struct _cl_device_id;
struct _cl_event;

namespace kernelfoundry {

enum class Backend { Host, OpenCL, CUDA };
enum class Impl { Candidate, Reference };

const char* backend_name(Backend backend);  // "host", "opencl", "cuda"
const char* harness_version();

// Errors the harness throws into task code; kf::main catches them (and anything else) and turns
// them into a result with status "error".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
// A device API call failed (the message names the call, the error and file:line).
class DeviceError : public Error {
 public:
  using Error::Error;
};
// A kernel source did not compile; log() holds the compiler's full output.
class CompileError : public Error {
 public:
  CompileError(const std::string& summary, std::string log)
      : Error(summary), log_(std::move(log)) {}
  const std::string& log() const { return log_; }

 private:
  std::string log_;
};

// ---- inputs -------------------------------------------------------------------------------
// Seeded input values: deterministic for (seed, buffer name, index), different across seeds.
struct Distribution {
  enum class Kind { Uniform, Normal, Ints, Constant };
  Kind kind = Kind::Uniform;
  double a = 0;  // uniform: low, normal: mean, ints: low, constant: value
  double b = 1;  // uniform: high (exclusive), normal: stddev, ints: high (inclusive)
};
inline Distribution uniform(double low, double high) {
  return {Distribution::Kind::Uniform, low, high};
}
inline Distribution normal(double mean, double stddev) {
  return {Distribution::Kind::Normal, mean, stddev};
}
inline Distribution ints(long low, long high) {
  return {Distribution::Kind::Ints, double(low), double(high)};
}
inline Distribution constant(double value) {
  return {Distribution::Kind::Constant, value, 0};
}

// ---- shapes and the benchmark -------------------------------------------------------------
// An ordered list of named sizes. id() is "rows=4096,cols=1024" (declaration order).
class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<std::pair<std::string, long>> dims) : dims_(dims) {}
  explicit Shape(std::vector<std::pair<std::string, long>> dims) : dims_(std::move(dims)) {}
  const std::vector<std::pair<std::string, long>>& dims() const { return dims_; }
  std::string id() const;

 private:
  std::vector<std::pair<std::string, long>> dims_;
};

struct Benchmark {
  std::string name;
  std::vector<Shape> shapes;
};
inline Benchmark benchmark(std::string name, std::vector<Shape> shapes) {
  return Benchmark{std::move(name), std::move(shapes)};
}

class Case;
class Buffer;
class Device;  // the backend behind buffers (src/harness/device.h)

// ---- OpenCL helpers (kf_harness_opencl) ---------------------------------------------------
// A work size of 1-3 dimensions; NDRange() means "let the driver choose" (local size only).
struct NDRange {
  unsigned dims = 0;
  std::size_t size[3] = {1, 1, 1};
  NDRange() = default;
  template <class X, class = std::enable_if_t<std::is_integral<X>::value>>
  NDRange(X x) : dims(1), size{std::size_t(x), 1, 1} {}  // NOLINT: {n} reads naturally
  template <class X, class Y, class = std::enable_if_t<std::is_integral<X>::value>>
  NDRange(X x, Y y) : dims(2), size{std::size_t(x), std::size_t(y), 1} {}
  template <class X, class Y, class Z, class = std::enable_if_t<std::is_integral<X>::value>>
  NDRange(X x, Y y, Z z) : dims(3), size{std::size_t(x), std::size_t(y), std::size_t(z)} {}
};

// A `__local` kernel argument of `bytes` bytes.
struct LocalMem {
  std::size_t bytes;
};
inline LocalMem local_mem(std::size_t bytes) {
  return LocalMem{bytes};
}

// A kernel of a program built by OpenCL::kernel(); owned by the runtime (cached per process).
class ClKernel {
 public:
  ClKernel(_cl_kernel* handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  _cl_kernel* get() const { return handle_; }
  const std::string& name() const { return name_; }

  // Sets arguments 0..n-1 in order: Buffers, local_mem(bytes), or scalars whose C++ size must
  // match the OpenCL parameter (int for `int`, long/int64_t for `long`, float for `float`).
  template <class... Args>
  ClKernel& args(const Args&... values) {
    unsigned index = 0;
    (set_arg(index++, values), ...);
    return *this;
  }
  void set_arg(unsigned index, const Buffer& buffer);
  void set_arg(unsigned index, LocalMem local);
  template <class T>
  void set_arg(unsigned index, const T& value) {
    static_assert(std::is_trivially_copyable<T>::value, "OpenCL kernel arguments are plain data");
    set_arg_raw(index, sizeof(T), &value);
  }
  void set_arg_raw(unsigned index, std::size_t size, const void* value);

 private:
  _cl_kernel* handle_;
  std::string name_;
};

// The OpenCL device the harness chose (env KF_OPENCL_PLATFORM: substring of the platform name;
// else the first platform with a device), with an in-order queue that has profiling enabled.
class OpenCL {
 public:
  virtual ~OpenCL() = default;
  virtual _cl_context* context() = 0;
  virtual _cl_command_queue* queue() = 0;
  virtual _cl_device_id* device() = 0;
  // Builds `file` (resolved against --kernel-dir; its folder is passed as -I when the source has
  // an #include) with `options`,
  // once per process, and returns its kernel `name`. A build failure throws CompileError with the
  // driver's log; the harness reports it as the candidate's compile error.
  virtual ClKernel& kernel(const std::string& file, const std::string& name,
                           const std::string& options = "") = 0;
  // Enqueues `kernel` on queue(). Launches made here are what a benchmark sample's device time
  // covers (first start to last end); with none the sample falls back to host time.
  virtual void launch(ClKernel& kernel, NDRange global, NDRange local = NDRange()) = 0;
  // Adds an event of a command the task enqueued itself to the sample's device time; the harness
  // releases it.
  virtual void track(_cl_event* event) = 0;
};

// ---- buffers ------------------------------------------------------------------------------
// A device (or host) allocation made by the harness, followed by guard bytes that are checked
// after every call. Outputs exist twice, once per implementation; Case::buffer() resolves to
// the set of the implementation being run.
class Buffer {
 public:
  enum class Role { Input, Output, InOut, Scratch };

  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  const std::string& name() const { return name_; }
  DType dtype() const { return dtype_; }
  Role role() const { return role_; }
  long count() const { return count_; }        // valid elements
  long capacity() const { return capacity_; }  // allocated elements
  std::size_t bytes() const { return std::size_t(count_) * dtype_size(dtype_); }

  // Host backend: the data pointer.
  template <class T>
  T* host() const {
    return static_cast<T*>(checked_ptr(Backend::Host));
  }
  // CUDA backend: the device pointer.
  template <class T>
  T* cuda() const {
    return static_cast<T*>(checked_ptr(Backend::CUDA));
  }
  // OpenCL backend: the cl_mem.
  _cl_mem* cl() const { return static_cast<_cl_mem*>(checked_ptr(Backend::OpenCL)); }

  // Copies between this buffer and host memory, on any backend (sizeof(T) == dtype size).
  template <class T>
  std::vector<T> read() const {
    check_elem_size(sizeof(T));
    std::vector<T> out(static_cast<std::size_t>(count_));
    read_bytes(out.data(), out.size() * sizeof(T));
    return out;
  }
  template <class T>
  void write(const std::vector<T>& values) {
    check_elem_size(sizeof(T));
    write_bytes(values.data(), values.size() * sizeof(T));
  }
  void read_bytes(void* dst, std::size_t bytes, std::size_t offset = 0) const;
  void write_bytes(const void* src, std::size_t bytes, std::size_t offset = 0);

  // Outputs: the number of elements this implementation produced (<= capacity); a count that
  // differs from the reference's is a shape mismatch. Reset to capacity before every call.
  void set_count(long count);

  void* handle() const { return mem_; }  // pointer (host, CUDA) or cl_mem (OpenCL)

 private:
  friend struct BufferAccess;  // src/harness: creates and owns buffers
  Buffer() = default;
  void* checked_ptr(Backend wanted) const;
  void check_elem_size(std::size_t size) const;

  std::string name_;
  DType dtype_ = DType::F32;
  Role role_ = Role::Input;
  long count_ = 0;
  long capacity_ = 0;
  void* mem_ = nullptr;
  Device* device_ = nullptr;  // the backend that owns mem_
};

// ---- the case -----------------------------------------------------------------------------
struct CaseState;

// One (shape, seed): what setup() declares and run() uses.
class Case {
 public:
  explicit Case(CaseState* state) : s_(state) {}

  long dim(const std::string& name) const;  // throws, naming the dims the shape has
  long dim(const std::string& name, long fallback) const;
  const Shape& shape() const;
  std::string shape_id() const;
  int seed() const;
  Backend backend() const;
  Impl impl() const;  // the implementation being run (valid inside run())

  // -- setup(): declare buffers (names are unique across all kinds) --
  Buffer& input(const std::string& name, DType dtype, long count, const Distribution& values);
  template <class T>
  Buffer& input(const std::string& name, DType dtype, const std::vector<T>& values) {
    return input_bytes(name, dtype, long(values.size()), values.data(), sizeof(T));
  }
  // Written by the implementation and compared with the reference's.
  void output(const std::string& name, DType dtype, long count, const Tolerance& tol);
  void output(const std::string& name, DType dtype, long count);  // default_tolerance(dtype)
  // Updated in place: reset to the same seeded values before every call, then compared.
  void inout(const std::string& name, DType dtype, long count, const Distribution& initial,
             const Tolerance& tol);
  // Workspace the implementation may use freely (one per implementation; not compared).
  void scratch(const std::string& name, DType dtype, long count);

  // -- run(): inputs, and the outputs/scratch of the implementation being run --
  Buffer& buffer(const std::string& name);

  OpenCL& opencl();  // throws unless the backend is OpenCL

  // Runtime parameters: --template-params first, then --params. Integral, floating, bool and
  // string fallbacks pick the type: c.param("BLOCK", 256), c.param("ALPHA", 0.5).
  bool has_param(const std::string& key) const;
  template <class T>
  T param(const std::string& key, T fallback) const {
    if constexpr (std::is_same<T, bool>::value) {
      return param_bool(key, fallback);
    } else if constexpr (std::is_integral<T>::value) {
      return static_cast<T>(param_int(key, static_cast<long long>(fallback)));
    } else if constexpr (std::is_floating_point<T>::value) {
      return static_cast<T>(param_double(key, static_cast<double>(fallback)));
    } else {
      return param_string(key, std::string(fallback));
    }
  }
  std::string param(const std::string& key, const char* fallback) const {
    return param_string(key, fallback);
  }
  // "-DKEY=VALUE ..." for every template parameter (for OpenCL build options).
  std::string param_defines() const;

  // A file name resolved against --kernel-dir (absolute paths unchanged).
  std::string kernel_path(const std::string& file) const;

 private:
  Buffer& input_bytes(const std::string& name, DType dtype, long count, const void* data,
                      std::size_t elem_size);
  bool param_bool(const std::string& key, bool fallback) const;
  long long param_int(const std::string& key, long long fallback) const;
  double param_double(const std::string& key, double fallback) const;
  std::string param_string(const std::string& key, const std::string& fallback) const;

  CaseState* s_;
};

// ---- the task -----------------------------------------------------------------------------
class Problem {
 public:
  virtual ~Problem() = default;
  // Declares the buffers of one case; called once per (shape, seed).
  virtual void setup(Case& c) = 0;
  // Runs one implementation on c's buffers. Leave work enqueued on the device: the harness
  // synchronises, times and checks. Throw (any exception) to report an error.
  virtual void run(Case& c, Impl impl) = 0;
};

// A template parameter of this run (--template-params), outside any Case: the entry point
// KernelFoundry generates for a templated kernel reads the combination to run with it. Booleans
// read as 0 / 1; `fallback` when the run names no such parameter.
long long template_param(const char* name, long long fallback);

// What kf::main runs: correctness shapes (every benchmark shape is checked too) and exactly one
// benchmark.
struct Suite {
  Backend backend = Backend::Host;
  std::vector<Shape> correctness;
  std::vector<Benchmark> benchmarks;
};

// Runs the protocol on argv and returns the exit code: 0 pass, 1 wrong values or shape mismatch,
// 2 runtime error (device error, out-of-bounds write, exception, bad arguments).
int main(int argc, char** argv, Problem& problem, const Suite& suite);
int main(int argc, char** argv, Problem& problem, Backend backend, std::vector<Shape> correctness,
         Benchmark benchmark);

}  // namespace kernelfoundry
