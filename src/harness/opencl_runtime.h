// The OpenCL runtime behind kf::OpenCL: device selection, the profiling queue, a per-process
// program/kernel cache, and the launch events that give a sample its device time.
#pragma once

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "kernelfoundry/harness.h"

namespace kernelfoundry {

// "CL_INVALID_VALUE" for -30, "error -1234" for codes it does not know.
std::string cl_error_name(cl_int err);
// Throws DeviceError "<call> failed: <error> (file:line)" when err != CL_SUCCESS.
void check_cl(cl_int err, const char* call, const char* file, int line);
#define KF_CL_CHECK(call) ::kernelfoundry::check_cl((call), #call, __FILE__, __LINE__)

class OpenCLRuntime : public OpenCL {
 public:
  // Picks the platform (env KF_OPENCL_PLATFORM, a case-insensitive substring of the platform
  // name; else the first platform with a device) and its first device (env KF_OPENCL_DEVICE: an
  // index). Throws Error naming the platforms it saw when none fits.
  explicit OpenCLRuntime(std::string kernel_dir);
  ~OpenCLRuntime() override;
  OpenCLRuntime(const OpenCLRuntime&) = delete;
  OpenCLRuntime& operator=(const OpenCLRuntime&) = delete;

  cl_context context() override { return context_; }
  cl_command_queue queue() override { return queue_; }
  cl_device_id device() override { return device_; }
  ClKernel& kernel(const std::string& file, const std::string& name,
                   const std::string& options) override;
  void launch(ClKernel& kernel, NDRange global, NDRange local) override;
  void track(cl_event event) override;

  // Device time of the events recorded since the last clear_events(): first start to last end,
  // in ms; -1 when there were none. Throws DeviceError when a command failed.
  double events_ms();
  void clear_events() noexcept;

  const std::string& platform_name() const { return platform_name_; }
  const std::string& device_name() const { return device_name_; }
  const std::string& device_version() const { return device_version_; }
  const std::string& driver_version() const { return driver_version_; }
  bool is_cpu() const { return is_cpu_; }
  std::size_t global_cache_bytes() const { return global_cache_bytes_; }
  // The device's limits: compute units, work-group size, local and global memory.
  std::vector<std::pair<std::string, std::string>> limits() const;

 private:
  cl_program build(const std::string& file, const std::string& options);

  std::string kernel_dir_;
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  std::string platform_name_, device_name_, device_version_, driver_version_;
  bool is_cpu_ = false;
  std::size_t global_cache_bytes_ = 0;

  std::map<std::string, cl_program> programs_;  // key: path + '\n' + options
  std::map<std::pair<cl_program, std::string>, std::unique_ptr<ClKernel>> kernels_;
  std::vector<std::pair<cl_event, std::string>> events_;  // with the kernel name, for messages
};

}  // namespace kernelfoundry
