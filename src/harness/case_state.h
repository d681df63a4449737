// What the harness keeps per (shape, seed) behind kf::Case: inputs with their checksums, and the
// two output sets (expected = the reference's, test = the implementation under test's).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/device.h"
#include "kernelfoundry/harness.h"

namespace kernelfoundry {

// Facts of the whole run that every case sees.
struct RunContext {
  Device* device = nullptr;
  nlohmann::json params = nlohmann::json::object();
  nlohmann::json template_params = nlohmann::json::object();
  std::string kernel_dir = ".";
};

// The run's --template-params, for template_param() (harness.h): set once by kf::main before any
// case runs.
void set_template_params(const nlohmann::json& params);

// Creates and frees Buffer objects (Buffer's constructor is private to keep task code from it).
struct BufferAccess {
  // Allocates capacity elements plus kGuardBytes, and writes the guard pattern.
  static std::unique_ptr<Buffer> create(Device& device, const std::string& name, DType dtype,
                                        Buffer::Role role, long capacity);
  static void destroy(Buffer& buffer) noexcept;
  // Moves the buffer's memory to a new allocation (its data and guard bytes copied, the old
  // memory released): the same Buffer, at another place on the device.
  static void move(Buffer& buffer);
  static Device& device(const Buffer& buffer) { return *buffer.device_; }
  static std::size_t capacity_bytes(const Buffer& buffer) {
    return std::size_t(buffer.capacity_) * dtype_size(buffer.dtype_);
  }
  static void reset_count(Buffer& buffer) { buffer.count_ = buffer.capacity_; }
};

// An output, in-out or scratch buffer as declared; it exists once per set.
struct OutputSpec {
  std::string name;
  DType dtype = DType::F32;
  Buffer::Role role = Buffer::Role::Output;
  long capacity = 0;
  Tolerance tol;
  std::vector<unsigned char> initial;  // in-out: the values restored before every call
};

enum SetIndex { kExpectedSet = 0, kTestSet = 1 };

struct CaseState {
  CaseState(const RunContext& context, const Shape& shape, int seed)
      : ctx(context), shape(shape), seed(seed) {}
  ~CaseState();
  CaseState(const CaseState&) = delete;
  CaseState& operator=(const CaseState&) = delete;

  const RunContext& ctx;
  Shape shape;
  int seed;
  bool in_setup = true;
  int active = -1;  // the set run() sees, -1 outside run()
  Impl impl = Impl::Candidate;

  std::vector<std::unique_ptr<Buffer>> inputs;
  std::vector<std::uint64_t> input_sums;  // checksums taken at upload
  // Parallel to inputs: the distribution an input was drawn from (perturbed values before timed
  // calls come from it); inputs given as bytes have none and are not perturbed.
  std::vector<bool> input_drawn;
  std::vector<Distribution> input_dists;
  std::vector<OutputSpec> outputs;
  std::vector<std::unique_ptr<Buffer>> sets[2];  // parallel to outputs

  bool has_name(const std::string& name) const;
};

}  // namespace kernelfoundry
