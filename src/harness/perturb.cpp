// Perturbed inputs for timed calls: strided fresh values, saved and restored (see perturb.h).
#include "harness/perturb.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "harness/fill.h"

namespace kernelfoundry {
namespace {

constexpr long kStrides[] = {31, 37, 41, 43, 47, 53, 59, 61};

// Swaps `count` elements of N bytes at mem + k * pitch with the packed `values`.
template <std::size_t N>
void swap_elements(unsigned char* mem, std::size_t pitch, unsigned char* values, long count) {
  unsigned char held[N];
  for (long k = 0; k < count; ++k) {
    unsigned char* at = mem + std::size_t(k) * pitch;
    unsigned char* v = values + std::size_t(k) * N;
    std::memcpy(held, at, N);
    std::memcpy(at, v, N);
    std::memcpy(v, held, N);
  }
}

// Writes the values of `p` into input `p.input`, saving what they replace in `undo`. Host memory
// is swapped in one pass (each touched cache line once); device memory takes a strided write,
// and a strided read before it unless `use_pristine` and a pristine copy holds the originals.
void write_perturbation(CaseState& cs, const Perturbation& p, PerturbUndo* undo,
                        bool use_pristine) {
  Buffer& b = *cs.inputs[std::size_t(p.input)];
  Device& device = BufferAccess::device(b);
  std::size_t size = dtype_size(b.dtype());
  std::size_t offset = std::size_t(p.offset) * size, pitch = std::size_t(p.stride) * size;
  std::vector<unsigned char> values(std::size_t(p.count) * size);
  // Before every timed call: small pieces, so a large input's draw uses every host thread.
  fill_values(values.data(), b.dtype(), p.count, cs.input_dists[std::size_t(p.input)], p.seed,
              1L << 15);
  if (const void* view = device.host_view(b.handle())) {
    unsigned char* mem = static_cast<unsigned char*>(const_cast<void*>(view)) + offset;
    switch (size) {
      case 1:
        swap_elements<1>(mem, pitch, values.data(), p.count);
        break;
      case 2:
        swap_elements<2>(mem, pitch, values.data(), p.count);
        break;
      case 4:
        swap_elements<4>(mem, pitch, values.data(), p.count);
        break;
      default:
        swap_elements<8>(mem, pitch, values.data(), p.count);
        break;
    }
    undo->saved.emplace_back(p, std::move(values));  // now the original bytes
    return;
  }
  std::vector<unsigned char> before;
  if (!use_pristine || !undo->make_pristine(device, b.handle(), std::size_t(p.input),
                                            BufferAccess::capacity_bytes(b))) {
    before.resize(values.size());
    device.download_strided(b.handle(), offset, pitch, before.data(), size, std::size_t(p.count));
  }
  device.upload_strided(b.handle(), offset, pitch, values.data(), size, std::size_t(p.count));
  undo->saved.emplace_back(p, std::move(before));
}

}  // namespace

PerturbUndo::~PerturbUndo() {
  for (void* mem : pristine_)
    if (mem != nullptr) device_->release(mem);
}

void* PerturbUndo::make_pristine(Device& device, void* input, std::size_t i, std::size_t bytes) {
  if (i >= tried_.size()) {
    tried_.resize(i + 1, false);
    pristine_.resize(i + 1, nullptr);
  }
  if (tried_[i]) return pristine_[i];
  tried_[i] = true;
  if (device_ != nullptr && device_ != &device) return nullptr;  // one device per undo
  device_ = &device;
  void* copy = nullptr;
  try {
    copy = device.alloc(bytes);
    device.copy(copy, input, 0, bytes);
  } catch (const DeviceError&) {
    // No room for a second copy of a large input: the strided read-back path works without.
    if (copy != nullptr) device.release(copy);
    return nullptr;
  }
  pristine_[i] = copy;
  return copy;
}

bool is_perturb_stride(long stride) {
  for (long s : kStrides)
    if (s == stride) return true;
  return false;
}

long perturbed_count(long elements, long offset, long stride) {
  if (stride <= 0 || offset < 0 || offset >= elements) return 0;
  return (elements - offset + stride - 1) / stride;
}

bool perturbable(const CaseState& cs, std::size_t i) {
  return i < cs.inputs.size() && cs.input_drawn[i] &&
         cs.input_dists[i].kind != Distribution::Kind::Constant && cs.inputs[i]->count() > 0;
}

void restore_inputs(CaseState& cs, PerturbUndo* undo) {
  // Newest first, so overlapping entries end with the oldest (original) bytes.
  for (auto it = undo->saved.rbegin(); it != undo->saved.rend(); ++it) {
    const Perturbation& p = it->first;
    Buffer& b = *cs.inputs[std::size_t(p.input)];
    std::size_t size = dtype_size(b.dtype());
    std::size_t offset = std::size_t(p.offset) * size, pitch = std::size_t(p.stride) * size;
    Device& device = BufferAccess::device(b);
    if (it->second.empty() && p.count > 0) {
      device.copy_strided(b.handle(), undo->pristine_of(std::size_t(p.input)), offset, pitch, size,
                          std::size_t(p.count));
    } else {
      device.upload_strided(b.handle(), offset, pitch, it->second.data(), size,
                            std::size_t(p.count));
    }
  }
  undo->saved.clear();
}

std::vector<Perturbation> perturb_inputs(CaseState& cs, std::mt19937_64& rng, PerturbUndo* undo) {
  restore_inputs(cs, undo);
  std::vector<Perturbation> out;
  for (std::size_t i = 0; i < cs.inputs.size(); ++i) {
    if (!perturbable(cs, i)) continue;
    long n = cs.inputs[i]->count();
    Perturbation p;
    p.input = int(i);
    p.stride = kStrides[rng() % (sizeof kStrides / sizeof kStrides[0])];
    p.offset = long(rng() % std::uint64_t(std::min(p.stride, n)));
    p.count = perturbed_count(n, p.offset, p.stride);
    p.seed = rng();
    write_perturbation(cs, p, undo, /*use_pristine=*/true);
    out.push_back(p);
  }
  return out;
}

std::size_t max_perturbation_size(const CaseState& cs) {
  return cs.inputs.size();
}

bool apply_perturbation(CaseState& cs, const std::vector<Perturbation>& perturb, PerturbUndo* undo,
                        std::string* err) {
  if (perturb.size() > max_perturbation_size(cs)) {
    *err = "the handed-over perturbation lists " + std::to_string(perturb.size()) +
           " inputs; the task has " + std::to_string(cs.inputs.size());
    return false;
  }
  // Every entry is checked before anything is written.
  std::set<int> seen;
  for (const Perturbation& p : perturb) {
    std::string what = "the handed-over perturbation of input " + std::to_string(p.input);
    if (p.input < 0 || !perturbable(cs, std::size_t(p.input))) {
      *err = what + " names an input the harness does not perturb";
      return false;
    }
    const Buffer& b = *cs.inputs[std::size_t(p.input)];
    what = "the handed-over perturbation of input '" + b.name() + "'";
    if (!seen.insert(p.input).second) {
      *err = what + " is listed twice";
      return false;
    }
    if (!is_perturb_stride(p.stride)) {
      *err = what + " has stride " + std::to_string(p.stride) +
             ", not one the harness uses (a prime in [" + std::to_string(kMinPerturbStride) + ", " +
             std::to_string(kMaxPerturbStride) + "])";
      return false;
    }
    if (p.offset < 0 || p.offset >= std::min(p.stride, b.count())) {
      *err = what + " has offset " + std::to_string(p.offset) + ", not in [0, " +
             std::to_string(std::min(p.stride, b.count())) + ")";
      return false;
    }
    long want = perturbed_count(b.count(), p.offset, p.stride);
    if (p.count != want) {
      *err = what + " changes " + std::to_string(p.count) + " elements; its stride and offset " +
             "reach " + std::to_string(want) + " of its " + std::to_string(b.count());
      return false;
    }
  }
  for (std::size_t i = 0; i < cs.inputs.size(); ++i) {
    if (perturbable(cs, i) && !seen.count(int(i))) {
      *err = "the handed-over perturbation leaves input '" + cs.inputs[i]->name() +
             "' unchanged; the harness changes every input drawn from a distribution";
      return false;
    }
  }
  // One checker call per perturbation: a pristine copy would cost more than it saves.
  for (const Perturbation& p : perturb) write_perturbation(cs, p, undo, /*use_pristine=*/false);
  return true;
}

}  // namespace kernelfoundry
