// kf::Case, kf::Buffer and kf::Shape: what setup() declares and run() reads.
#include <algorithm>
#include <cmath>

#include "harness/case_state.h"
#include "harness/checks.h"
#include "harness/fill.h"

namespace kernelfoundry {
namespace {

const char* role_name(Buffer::Role role) {
  switch (role) {
    case Buffer::Role::Input:
      return "input";
    case Buffer::Role::Output:
      return "output";
    case Buffer::Role::InOut:
      return "in-out";
    case Buffer::Role::Scratch:
      return "scratch";
  }
  return "?";
}

std::string join_path(const std::string& dir, const std::string& file) {
  if (!file.empty() && file[0] == '/') return file;
  if (dir.empty() || dir == ".") return file;
  return dir.back() == '/' ? dir + file : dir + "/" + file;
}

}  // namespace

// ---- Shape --------------------------------------------------------------------------------

std::string Shape::id() const {
  std::string out;
  for (const auto& [name, value] : dims_) {
    if (!out.empty()) out += ',';
    out += name + "=" + std::to_string(value);
  }
  return out;
}

// ---- BufferAccess / CaseState -------------------------------------------------------------

std::unique_ptr<Buffer> BufferAccess::create(Device& device, const std::string& name, DType dtype,
                                             Buffer::Role role, long capacity) {
  std::unique_ptr<Buffer> b(new Buffer());
  b->name_ = name;
  b->dtype_ = dtype;
  b->role_ = role;
  b->count_ = b->capacity_ = capacity;
  b->device_ = &device;
  b->mem_ = device.alloc_buffer(name, capacity_bytes(*b));
  try {
    restore_guard(*b);
  } catch (...) {
    device.release(b->mem_);
    throw;
  }
  return b;
}

void BufferAccess::destroy(Buffer& buffer) noexcept {
  if (buffer.mem_ != nullptr) buffer.device_->release(buffer.mem_);
  buffer.mem_ = nullptr;
}

void BufferAccess::move(Buffer& buffer) {
  Device& device = *buffer.device_;
  std::size_t bytes = capacity_bytes(buffer);
  std::size_t held = bytes + (device.page_guarded(buffer.mem_) ? 0 : kGuardBytes);
  void* mem = device.alloc_buffer(buffer.name_, bytes);
  try {
    device.copy(mem, buffer.mem_, 0, held);
  } catch (...) {
    device.release(mem);
    throw;
  }
  device.release(buffer.mem_);
  buffer.mem_ = mem;
}

CaseState::~CaseState() {
  for (auto& b : inputs) BufferAccess::destroy(*b);
  for (auto& set : sets) {
    for (auto& b : set) BufferAccess::destroy(*b);
  }
}

bool CaseState::has_name(const std::string& name) const {
  for (const auto& b : inputs) {
    if (b->name() == name) return true;
  }
  for (const auto& o : outputs) {
    if (o.name == name) return true;
  }
  return false;
}

// ---- Buffer -------------------------------------------------------------------------------

void* Buffer::checked_ptr(Backend wanted) const {
  Backend have = device_->backend();
  if (have == wanted) return mem_;
  std::string use = have == Backend::OpenCL ? "pass it to ClKernel::args() (or use .cl())"
                    : have == Backend::CUDA ? "use .cuda<T>() for the device pointer"
                                            : "use .host<T>()";
  throw Error(std::string("buffer '") + name_ + "' lives on the " + backend_name(have) +
              " backend, not " + backend_name(wanted) + ": " + use +
              ", or copy with read<T>()/write<T>()");
}

void Buffer::check_elem_size(std::size_t size) const {
  if (size != dtype_size(dtype_)) {
    throw Error("buffer '" + name_ + "' holds " + dtype_name(dtype_) + " (" +
                std::to_string(dtype_size(dtype_)) + "-byte elements) but read/write used a " +
                std::to_string(size) + "-byte type");
  }
}

void Buffer::read_bytes(void* dst, std::size_t bytes, std::size_t offset) const {
  if (offset + bytes > BufferAccess::capacity_bytes(*this)) {
    throw Error("read of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                " is past the end of buffer '" + name_ + "'");
  }
  device_->download(mem_, offset, dst, bytes);
}

void Buffer::write_bytes(const void* src, std::size_t bytes, std::size_t offset) {
  if (offset + bytes > BufferAccess::capacity_bytes(*this)) {
    throw Error("write of " + std::to_string(bytes) + " bytes at offset " + std::to_string(offset) +
                " is past the end of buffer '" + name_ + "'");
  }
  device_->upload(mem_, offset, src, bytes);
}

void Buffer::set_count(long count) {
  if (role_ != Role::Output && role_ != Role::InOut) {
    throw Error("set_count on " + std::string(role_name(role_)) + " buffer '" + name_ +
                "': only outputs have a produced count");
  }
  if (count < 0 || count > capacity_) {
    throw Error("set_count(" + std::to_string(count) + ") on output '" + name_ +
                "' is outside 0.." + std::to_string(capacity_));
  }
  count_ = count;
}

// ---- Case ---------------------------------------------------------------------------------

long Case::dim(const std::string& name) const {
  for (const auto& [key, value] : s_->shape.dims()) {
    if (key == name) return value;
  }
  throw Error("shape '" + s_->shape.id() + "' has no dimension '" + name + "'");
}

long Case::dim(const std::string& name, long fallback) const {
  for (const auto& [key, value] : s_->shape.dims()) {
    if (key == name) return value;
  }
  return fallback;
}

const Shape& Case::shape() const {
  return s_->shape;
}
std::string Case::shape_id() const {
  return s_->shape.id();
}
int Case::seed() const {
  return s_->seed;
}
Backend Case::backend() const {
  return s_->ctx.device->backend();
}
Impl Case::impl() const {
  return s_->impl;
}

namespace {

void check_declaration(const CaseState& s, const std::string& what, const std::string& name,
                       long count) {
  if (!s.in_setup) throw Error(what + " '" + name + "' declared outside setup()");
  if (name.empty()) throw Error(what + " needs a name");
  if (s.has_name(name)) throw Error("buffer name '" + name + "' is declared twice");
  if (count < 0) throw Error(what + " '" + name + "' has a negative element count");
}

}  // namespace

Buffer& Case::input(const std::string& name, DType dtype, long count, const Distribution& values) {
  check_declaration(*s_, "input", name, count);
  std::vector<unsigned char> host(std::size_t(count) * dtype_size(dtype));
  fill_values(host.data(), dtype, count, values, stream_key(s_->seed, name));
  Buffer& b = input_bytes(name, dtype, count, host.data(), dtype_size(dtype));
  s_->input_drawn.back() = values.kind != Distribution::Kind::Constant;
  s_->input_dists.back() = values;
  return b;
}

Buffer& Case::input_bytes(const std::string& name, DType dtype, long count, const void* data,
                          std::size_t elem_size) {
  check_declaration(*s_, "input", name, count);
  if (elem_size != dtype_size(dtype)) {
    throw Error("input '" + name + "' is " + dtype_name(dtype) + " but its values are " +
                std::to_string(elem_size) + "-byte elements");
  }
  auto buffer = BufferAccess::create(*s_->ctx.device, name, dtype, Buffer::Role::Input, count);
  std::size_t bytes = std::size_t(count) * elem_size;
  buffer->write_bytes(data, bytes);
  s_->input_sums.push_back(checksum_chunked(data, bytes));
  s_->input_drawn.push_back(false);
  s_->input_dists.push_back(Distribution{});
  s_->inputs.push_back(std::move(buffer));
  return *s_->inputs.back();
}

namespace {

void declare_output(CaseState& s, OutputSpec spec) {
  for (int set = 0; set < 2; ++set) {
    s.sets[set].push_back(
        BufferAccess::create(*s.ctx.device, spec.name, spec.dtype, spec.role, spec.capacity));
  }
  s.outputs.push_back(std::move(spec));
}

}  // namespace

void Case::output(const std::string& name, DType dtype, long count, const Tolerance& tol) {
  check_declaration(*s_, "output", name, count);
  declare_output(*s_, OutputSpec{name, dtype, Buffer::Role::Output, count, tol, {}});
}

void Case::output(const std::string& name, DType dtype, long count) {
  output(name, dtype, count, default_tolerance(dtype));
}

void Case::inout(const std::string& name, DType dtype, long count, const Distribution& initial,
                 const Tolerance& tol) {
  check_declaration(*s_, "in-out buffer", name, count);
  OutputSpec spec{name, dtype, Buffer::Role::InOut, count, tol, {}};
  spec.initial.resize(std::size_t(count) * dtype_size(dtype));
  fill_values(spec.initial.data(), dtype, count, initial, stream_key(s_->seed, name));
  declare_output(*s_, std::move(spec));
}

void Case::scratch(const std::string& name, DType dtype, long count) {
  check_declaration(*s_, "scratch buffer", name, count);
  declare_output(*s_, OutputSpec{name, dtype, Buffer::Role::Scratch, count, exact(), {}});
}

Buffer& Case::buffer(const std::string& name) {
  for (auto& b : s_->inputs) {
    if (b->name() == name) return *b;
  }
  for (std::size_t k = 0; k < s_->outputs.size(); ++k) {
    if (s_->outputs[k].name != name) continue;
    if (s_->active < 0) {
      throw Error("buffer '" + name + "' is a " + role_name(s_->outputs[k].role) +
                  " buffer: it exists once per implementation, so it is reachable only inside "
                  "run()");
    }
    return *s_->sets[s_->active][k];
  }
  std::string known;
  for (const auto& b : s_->inputs) known += (known.empty() ? "" : ", ") + b->name();
  for (const auto& o : s_->outputs) known += (known.empty() ? "" : ", ") + o.name;
  throw Error("no buffer named '" + name + "' (declared: " + (known.empty() ? "none" : known) +
              ")");
}

OpenCL& Case::opencl() {
  OpenCL* cl = s_->ctx.device->opencl();
  if (cl == nullptr) {
    throw Error(std::string("Case::opencl() on the ") + backend_name(backend()) +
                " backend: pass kf::Backend::OpenCL to kf::main");
  }
  return *cl;
}

// ---- parameters ---------------------------------------------------------------------------

namespace {

const nlohmann::json* find_param(const RunContext& ctx, const std::string& key) {
  for (const nlohmann::json* source : {&ctx.template_params, &ctx.params}) {
    auto it = source->find(key);
    if (it != source->end()) return &*it;
  }
  return nullptr;
}

[[noreturn]] void wrong_type(const std::string& key, const nlohmann::json& v, const char* want) {
  throw Error("parameter '" + key + "' is " + v.dump() + ", not " + want);
}

}  // namespace

namespace {
nlohmann::json g_template_params = nlohmann::json::object();
}  // namespace

void set_template_params(const nlohmann::json& params) {
  g_template_params = params;
}

long long template_param(const char* name, long long fallback) {
  auto it = g_template_params.find(name);
  if (it == g_template_params.end()) return fallback;
  if (it->is_boolean()) return it->get<bool>() ? 1 : 0;
  if (it->is_number_integer()) return it->get<long long>();
  if (it->is_string()) {
    const std::string& s = it->get_ref<const std::string&>();
    char* end = nullptr;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && *end == '\0') return n;
  }
  throw Error("template parameter '" + std::string(name) + "' is " + it->dump() +
              ", not an integer or a boolean");
}

bool Case::has_param(const std::string& key) const {
  return find_param(s_->ctx, key) != nullptr;
}

bool Case::param_bool(const std::string& key, bool fallback) const {
  const nlohmann::json* v = find_param(s_->ctx, key);
  if (v == nullptr) return fallback;
  if (v->is_boolean()) return v->get<bool>();
  if (v->is_number_integer()) return v->get<long long>() != 0;
  wrong_type(key, *v, "a boolean");
}

long long Case::param_int(const std::string& key, long long fallback) const {
  const nlohmann::json* v = find_param(s_->ctx, key);
  if (v == nullptr) return fallback;
  if (v->is_number_integer()) return v->get<long long>();
  if (v->is_number_float()) {
    double d = v->get<double>();
    if (std::floor(d) == d) return static_cast<long long>(d);
  }
  if (v->is_string()) {  // template parameters often arrive as strings ("128")
    const std::string& s = v->get_ref<const std::string&>();
    char* end = nullptr;
    long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && *end == '\0') return n;
  }
  wrong_type(key, *v, "an integer");
}

double Case::param_double(const std::string& key, double fallback) const {
  const nlohmann::json* v = find_param(s_->ctx, key);
  if (v == nullptr) return fallback;
  if (v->is_number()) return v->get<double>();
  if (v->is_string()) {
    const std::string& s = v->get_ref<const std::string&>();
    char* end = nullptr;
    double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && *end == '\0') return d;
  }
  wrong_type(key, *v, "a number");
}

std::string Case::param_string(const std::string& key, const std::string& fallback) const {
  const nlohmann::json* v = find_param(s_->ctx, key);
  if (v == nullptr) return fallback;
  if (v->is_string()) return v->get<std::string>();
  return v->dump();
}

std::string Case::param_defines() const {
  std::string out;
  for (const auto& [key, value] : s_->ctx.template_params.items()) {
    std::string text = value.is_string()    ? value.get<std::string>()
                       : value.is_boolean() ? (value.get<bool>() ? "1" : "0")
                                            : value.dump();
    out += (out.empty() ? "-D" : " -D") + key + "=" + text;
  }
  return out;
}

std::string Case::kernel_path(const std::string& file) const {
  return join_path(s_->ctx.kernel_dir, file);
}

}  // namespace kernelfoundry
