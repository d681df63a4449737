// OpenCL runtime: device selection, program builds with their logs, kernel arguments, launches.
#include "harness/opencl_runtime.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kernelfoundry {

std::string cl_error_name(cl_int err) {
  switch (err) {
#define KF_CL_ERR(name) \
  case name:            \
    return #name;
    KF_CL_ERR(CL_SUCCESS)
    KF_CL_ERR(CL_DEVICE_NOT_FOUND)
    KF_CL_ERR(CL_DEVICE_NOT_AVAILABLE)
    KF_CL_ERR(CL_COMPILER_NOT_AVAILABLE)
    KF_CL_ERR(CL_MEM_OBJECT_ALLOCATION_FAILURE)
    KF_CL_ERR(CL_OUT_OF_RESOURCES)
    KF_CL_ERR(CL_OUT_OF_HOST_MEMORY)
    KF_CL_ERR(CL_PROFILING_INFO_NOT_AVAILABLE)
    KF_CL_ERR(CL_MEM_COPY_OVERLAP)
    KF_CL_ERR(CL_BUILD_PROGRAM_FAILURE)
    KF_CL_ERR(CL_MAP_FAILURE)
    KF_CL_ERR(CL_MISALIGNED_SUB_BUFFER_OFFSET)
    KF_CL_ERR(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
    KF_CL_ERR(CL_COMPILE_PROGRAM_FAILURE)
    KF_CL_ERR(CL_LINK_PROGRAM_FAILURE)
    KF_CL_ERR(CL_INVALID_VALUE)
    KF_CL_ERR(CL_INVALID_DEVICE_TYPE)
    KF_CL_ERR(CL_INVALID_PLATFORM)
    KF_CL_ERR(CL_INVALID_DEVICE)
    KF_CL_ERR(CL_INVALID_CONTEXT)
    KF_CL_ERR(CL_INVALID_QUEUE_PROPERTIES)
    KF_CL_ERR(CL_INVALID_COMMAND_QUEUE)
    KF_CL_ERR(CL_INVALID_HOST_PTR)
    KF_CL_ERR(CL_INVALID_MEM_OBJECT)
    KF_CL_ERR(CL_INVALID_BINARY)
    KF_CL_ERR(CL_INVALID_BUILD_OPTIONS)
    KF_CL_ERR(CL_INVALID_PROGRAM)
    KF_CL_ERR(CL_INVALID_PROGRAM_EXECUTABLE)
    KF_CL_ERR(CL_INVALID_KERNEL_NAME)
    KF_CL_ERR(CL_INVALID_KERNEL_DEFINITION)
    KF_CL_ERR(CL_INVALID_KERNEL)
    KF_CL_ERR(CL_INVALID_ARG_INDEX)
    KF_CL_ERR(CL_INVALID_ARG_VALUE)
    KF_CL_ERR(CL_INVALID_ARG_SIZE)
    KF_CL_ERR(CL_INVALID_KERNEL_ARGS)
    KF_CL_ERR(CL_INVALID_WORK_DIMENSION)
    KF_CL_ERR(CL_INVALID_WORK_GROUP_SIZE)
    KF_CL_ERR(CL_INVALID_WORK_ITEM_SIZE)
    KF_CL_ERR(CL_INVALID_GLOBAL_OFFSET)
    KF_CL_ERR(CL_INVALID_EVENT_WAIT_LIST)
    KF_CL_ERR(CL_INVALID_EVENT)
    KF_CL_ERR(CL_INVALID_OPERATION)
    KF_CL_ERR(CL_INVALID_BUFFER_SIZE)
    KF_CL_ERR(CL_INVALID_GLOBAL_WORK_SIZE)
    KF_CL_ERR(CL_INVALID_PROPERTY)
#undef KF_CL_ERR
    default:
      return "error " + std::to_string(err);
  }
}

void check_cl(cl_int err, const char* call, const char* file, int line) {
  if (err == CL_SUCCESS) return;
  const char* base = std::strrchr(file, '/');
  throw DeviceError(std::string(call) + " failed: " + cl_error_name(err) + " (" +
                    (base ? base + 1 : file) + ":" + std::to_string(line) + ")");
}

namespace {

// Build options appended to every OpenCL build; see OpenCLRuntime::build.
constexpr const char* kNoAssemblyOptions =
    " -Dasm=kf_inline_assembly_is_not_allowed -D__asm=kf_inline_assembly_is_not_allowed"
    " -D__asm__=kf_inline_assembly_is_not_allowed";

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  std::size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetPlatformInfo(p, what, size, &s[0], nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  std::size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string s(size, '\0');
  clGetDeviceInfo(d, what, size, &s[0], nullptr);
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string join_path(const std::string& dir, const std::string& file) {
  if (!file.empty() && file[0] == '/') return file;
  if (dir.empty() || dir == ".") return file;
  return dir.back() == '/' ? dir + file : dir + "/" + file;
}

// Drivers compile a copy of the source: PoCL a temporary file (/.../tempfile_Ab12Cd.cl), NVIDIA
// an unnamed buffer (<kernel>). Naming the real file makes log lines read softmax.cl:27:25, as
// a host compiler's would, and keeps cache paths out of the eval log.
std::string name_source_in_log(const std::string& log, const std::string& file) {
  auto is_name_char = [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) != 0 || ch == '_';
  };
  std::string out;
  std::size_t i = 0;
  while (i < log.size()) {
    std::size_t hit = log.find("tempfile_", i);
    if (hit == std::string::npos) break;
    std::size_t start = hit;  // back over the directory part of the path
    while (start > i && log[start - 1] != ' ' && log[start - 1] != '\n' && log[start - 1] != '\'' &&
           log[start - 1] != '"') {
      --start;
    }
    std::size_t end = hit + std::strlen("tempfile_");
    while (end < log.size() && is_name_char(log[end])) ++end;
    if (log.compare(end, 3, ".cl") == 0) {
      out.append(log, i, start - i);
      out += file;
      i = end + 3;
    } else {
      out.append(log, i, end - i);
      i = end;
    }
  }
  out.append(log, i, std::string::npos);
  const std::string unnamed = "<kernel>:";
  for (std::size_t at = out.find(unnamed); at != std::string::npos; at = out.find(unnamed, at)) {
    out.replace(at, unnamed.size() - 1, file);
    at += file.size();
  }
  return out;
}

}  // namespace

OpenCLRuntime::OpenCLRuntime(std::string kernel_dir) : kernel_dir_(std::move(kernel_dir)) {
  cl_uint count = 0;
  cl_int err = clGetPlatformIDs(0, nullptr, &count);
  if (err != CL_SUCCESS || count == 0) {
    throw Error("no OpenCL platform found (clGetPlatformIDs: " + cl_error_name(err) +
                "); is an ICD (PoCL, NVIDIA, Intel) installed under /etc/OpenCL/vendors?");
  }
  std::vector<cl_platform_id> platforms(count);
  KF_CL_CHECK(clGetPlatformIDs(count, platforms.data(), nullptr));

  const char* want_env = std::getenv("KF_OPENCL_PLATFORM");
  std::string want = want_env ? lower(want_env) : "";
  std::string seen;
  for (cl_platform_id p : platforms) {
    std::string name = platform_string(p, CL_PLATFORM_NAME);
    seen += (seen.empty() ? "'" : ", '") + name + "'";
    if (!want.empty() && lower(name).find(want) == std::string::npos) continue;
    cl_uint devices = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &devices) != CL_SUCCESS || devices == 0) {
      continue;
    }
    std::vector<cl_device_id> ids(devices);
    KF_CL_CHECK(clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, devices, ids.data(), nullptr));
    cl_uint index = 0;
    if (const char* d = std::getenv("KF_OPENCL_DEVICE")) {
      index = static_cast<cl_uint>(std::strtoul(d, nullptr, 10));
      if (index >= devices) {
        throw Error("KF_OPENCL_DEVICE=" + std::string(d) + " but platform '" + name + "' has " +
                    std::to_string(devices) + " device(s)");
      }
    }
    platform_ = p;
    device_ = ids[index];
    platform_name_ = name;
    break;
  }
  if (device_ == nullptr) {
    throw Error(want.empty()
                    ? "no OpenCL platform has a device (platforms: " + seen + ")"
                    : "no OpenCL platform matching KF_OPENCL_PLATFORM='" + std::string(want_env) +
                          "' has a device (platforms: " + seen + ")");
  }
  device_name_ = device_string(device_, CL_DEVICE_NAME);
  device_version_ = device_string(device_, CL_DEVICE_VERSION);
  driver_version_ = device_string(device_, CL_DRIVER_VERSION);
  cl_device_type type = 0;
  clGetDeviceInfo(device_, CL_DEVICE_TYPE, sizeof type, &type, nullptr);
  is_cpu_ = (type & CL_DEVICE_TYPE_CPU) != 0;
  cl_ulong cache = 0;
  clGetDeviceInfo(device_, CL_DEVICE_GLOBAL_MEM_CACHE_SIZE, sizeof cache, &cache, nullptr);
  global_cache_bytes_ = static_cast<std::size_t>(cache);

  cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                   reinterpret_cast<cl_context_properties>(platform_), 0};
  context_ = clCreateContext(props, 1, &device_, nullptr, nullptr, &err);
  KF_CL_CHECK(err);
  queue_ = clCreateCommandQueue(context_, device_, CL_QUEUE_PROFILING_ENABLE, &err);
  KF_CL_CHECK(err);
}

OpenCLRuntime::~OpenCLRuntime() {
  clear_events();
  if (queue_) clFinish(queue_);
  for (auto& entry : kernels_) clReleaseKernel(entry.second->get());
  for (auto& entry : programs_) clReleaseProgram(entry.second);
  if (queue_) clReleaseCommandQueue(queue_);
  if (context_) clReleaseContext(context_);
}

cl_program OpenCLRuntime::build(const std::string& file, const std::string& options) {
  std::string path = join_path(kernel_dir_, file);
  std::string key = path + '\n' + options;
  auto it = programs_.find(key);
  if (it != programs_.end()) return it->second;

  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("OpenCL kernel file '" + file + "' not found (looked for " + path +
                "; set --kernel-dir to the folder that holds the .cl files)");
  }
  std::stringstream text;
  text << in.rdbuf();
  std::string source = text.str();
  const char* src = source.c_str();
  std::size_t length = source.size();
  cl_int err = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(context_, 1, &src, &length, &err);
  KF_CL_CHECK(err);

  // Inline assembly (a clang extension, native code on a CPU device: system calls, the cycle
  // counter) is refused: the evaluator's screen refuses the names written out anywhere in the
  // source, `#undef` included, and these macros turn one formed by token pasting into an
  // undeclared identifier.
  std::string flags = options + kNoAssemblyOptions;
  // -I only where the source includes something: the folder's path is part of the driver's
  // compile-cache key (PoCL), and a per-run folder would then miss that cache on every run.
  if (source.find("#include") != std::string::npos) {
    std::string dir = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
    flags += dir.find(' ') == std::string::npos ? " -I " + dir : " -I \"" + dir + "\"";
  }
  err = clBuildProgram(program, 1, &device_, flags.c_str(), nullptr, nullptr);

  std::size_t log_size = 0;
  clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) {
    clGetProgramBuildInfo(program, device_, CL_PROGRAM_BUILD_LOG, log_size, &log[0], nullptr);
  }
  while (!log.empty() &&
         (log.back() == '\0' || std::isspace(static_cast<unsigned char>(log.back())))) {
    log.pop_back();
  }
  log = name_source_in_log(log, file);
  if (err != CL_SUCCESS) {
    clReleaseProgram(program);
    throw CompileError("OpenCL build of '" + file + "' failed (" + cl_error_name(err) + ")" +
                           (options.empty() ? "" : " with options '" + options + "'"),
                       log);
  }
  if (!log.empty()) {  // warnings are worth showing; they reach the eval log
    std::printf("OpenCL build log for %s:\n%.4000s\n", file.c_str(), log.c_str());
    std::fflush(stdout);
  }
  programs_.emplace(key, program);
  return program;
}

ClKernel& OpenCLRuntime::kernel(const std::string& file, const std::string& name,
                                const std::string& options) {
  cl_program program = build(file, options);
  auto key = std::make_pair(program, name);
  auto it = kernels_.find(key);
  if (it != kernels_.end()) return *it->second;
  cl_int err = CL_SUCCESS;
  cl_kernel k = clCreateKernel(program, name.c_str(), &err);
  if (err == CL_INVALID_KERNEL_NAME) {
    std::size_t size = 0;
    clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, 0, nullptr, &size);
    std::string names(size, '\0');
    if (size > 0) clGetProgramInfo(program, CL_PROGRAM_KERNEL_NAMES, size, &names[0], nullptr);
    while (!names.empty() && names.back() == '\0') names.pop_back();
    throw CompileError("OpenCL kernel '" + name + "' not found in '" + file +
                           "' (it defines: " + (names.empty() ? "no kernels" : names) + ")",
                       "");
  }
  KF_CL_CHECK(err);
  auto& slot = kernels_[key];
  slot = std::make_unique<ClKernel>(k, name);
  return *slot;
}

void OpenCLRuntime::launch(ClKernel& kernel, NDRange global, NDRange local) {
  if (global.dims == 0) throw Error("launch of '" + kernel.name() + "': global size is empty");
  if (local.dims != 0 && local.dims != global.dims) {
    throw Error("launch of '" + kernel.name() + "': global has " + std::to_string(global.dims) +
                " dimension(s) but local has " + std::to_string(local.dims));
  }
  for (unsigned d = 0; d < local.dims; ++d) {
    if (local.size[d] == 0 || global.size[d] % local.size[d] != 0) {
      throw Error("launch of '" + kernel.name() + "': global size " +
                  std::to_string(global.size[d]) + " is not a multiple of local size " +
                  std::to_string(local.size[d]) + " in dimension " + std::to_string(d));
    }
  }
  cl_event event = nullptr;
  cl_int err = clEnqueueNDRangeKernel(queue_, kernel.get(), global.dims, nullptr, global.size,
                                      local.dims ? local.size : nullptr, 0, nullptr, &event);
  if (err != CL_SUCCESS) {
    std::string sizes = std::to_string(global.size[0]);
    for (unsigned d = 1; d < global.dims; ++d) sizes += "x" + std::to_string(global.size[d]);
    if (local.dims) {
      sizes += " local " + std::to_string(local.size[0]);
      for (unsigned d = 1; d < local.dims; ++d) sizes += "x" + std::to_string(local.size[d]);
    }
    std::string hint = err == CL_INVALID_KERNEL_ARGS ? " (not every argument was set)" : "";
    throw DeviceError("clEnqueueNDRangeKernel('" + kernel.name() + "', global " + sizes +
                      ") failed: " + cl_error_name(err) + hint);
  }
  events_.emplace_back(event, kernel.name());
}

void OpenCLRuntime::track(cl_event event) {
  if (event != nullptr) events_.emplace_back(event, "tracked command");
}

double OpenCLRuntime::events_ms() {
  if (events_.empty()) return -1;
  cl_ulong first = ~cl_ulong(0), last = 0;
  for (auto& [event, name] : events_) {
    cl_int status = CL_COMPLETE;
    KF_CL_CHECK(
        clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr));
    if (status < 0)
      throw DeviceError("OpenCL command '" + name + "' failed: " + cl_error_name(status));
    cl_ulong start = 0, end = 0;
    KF_CL_CHECK(
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr));
    KF_CL_CHECK(
        clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr));
    first = std::min(first, start);
    last = std::max(last, end);
  }
  return last >= first ? double(last - first) * 1e-6 : 0.0;
}

void OpenCLRuntime::clear_events() noexcept {
  for (auto& entry : events_) clReleaseEvent(entry.first);
  events_.clear();
}

// ClKernel's non-template members live here: they exist only where OpenCL is linked.
void ClKernel::set_arg(unsigned index, const Buffer& buffer) {
  cl_mem mem = buffer.cl();
  set_arg_raw(index, sizeof mem, &mem);
}

void ClKernel::set_arg(unsigned index, LocalMem local) {
  set_arg_raw(index, local.bytes, nullptr);
}

void ClKernel::set_arg_raw(unsigned index, std::size_t size, const void* value) {
  cl_int err = clSetKernelArg(handle_, index, size, value);
  if (err == CL_SUCCESS) return;
  std::string hint;
  if (err == CL_INVALID_ARG_SIZE) {
    hint = " (the C++ value's size must match the kernel parameter: int is 4 bytes, long 8)";
  } else if (err == CL_INVALID_ARG_INDEX) {
    hint = " (the kernel has fewer parameters)";
  }
  throw DeviceError("clSetKernelArg('" + name_ + "', arg " + std::to_string(index) + ", " +
                    std::to_string(size) + " bytes) failed: " + cl_error_name(err) + hint);
}

std::vector<std::pair<std::string, std::string>> OpenCLRuntime::limits() const {
  cl_uint units = 0;
  std::size_t group = 0;
  cl_ulong local = 0, global = 0;
  clGetDeviceInfo(device_, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units, &units, nullptr);
  clGetDeviceInfo(device_, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof group, &group, nullptr);
  clGetDeviceInfo(device_, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local, &local, nullptr);
  clGetDeviceInfo(device_, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, nullptr);
  return {{"compute_units", std::to_string(units)},
          {"max_threads_per_group", std::to_string(group)},
          {"local_mem_bytes", std::to_string(local)},
          {"global_mem_bytes", std::to_string(global)},
          {"global_cache_bytes", std::to_string(global_cache_bytes_)}};
}

}  // namespace kernelfoundry
