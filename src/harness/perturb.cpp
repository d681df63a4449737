// Perturbed inputs for timed calls (see perturb.h).
#include "harness/perturb.h"

namespace kernelfoundry {
namespace {

// Elements each drawn input gets new values at before every timed call.
constexpr int kPerturbedElements = 4;

}  // namespace

void restore_inputs(CaseState& cs, PerturbUndo* undo) {
  for (auto it = undo->saved.rbegin(); it != undo->saved.rend(); ++it) {
    Buffer& b = *cs.inputs[std::size_t(it->first.input)];
    std::size_t size = dtype_size(b.dtype());
    b.write_bytes(it->second.data(), size, std::size_t(it->first.index) * size);
  }
  undo->saved.clear();
}

std::vector<Perturbation> perturb_inputs(CaseState& cs, std::mt19937_64& rng, PerturbUndo* undo) {
  restore_inputs(cs, undo);
  std::vector<Perturbation> out;
  for (std::size_t i = 0; i < cs.inputs.size(); ++i) {
    Buffer& b = *cs.inputs[i];
    if (!cs.input_drawn[i] || b.count() == 0) continue;
    std::size_t size = dtype_size(b.dtype());
    for (int n = 0; n < kPerturbedElements; ++n) {
      long index = long(rng() % std::uint64_t(b.count()));
      std::vector<unsigned char> before(size), after(size);
      b.read_bytes(before.data(), size, std::size_t(index) * size);
      // A value that differs from the one there (a few tries: small integer ranges repeat).
      for (int attempt = 0; attempt < 8; ++attempt) {
        fill_values(after.data(), b.dtype(), 1, cs.input_dists[i], rng());
        if (after != before) break;
      }
      if (after == before) continue;
      Perturbation p{int(i), index, to_hex(after.data(), size)};
      b.write_bytes(after.data(), size, std::size_t(index) * size);
      undo->saved.push_back({p, before});
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::size_t max_perturbation_size(const CaseState& cs) {
  return std::size_t(kPerturbedElements) * cs.inputs.size();
}

bool apply_perturbation(CaseState& cs, const std::vector<Perturbation>& perturb, PerturbUndo* undo,
                        std::string* err) {
  if (perturb.size() > max_perturbation_size(cs)) {
    *err = "the handed-over perturbation lists more elements than the harness changes";
    return false;
  }
  for (const Perturbation& p : perturb) {
    std::vector<unsigned char> bytes;
    bool ok = p.input >= 0 && std::size_t(p.input) < cs.inputs.size() &&
              cs.input_drawn[std::size_t(p.input)] && from_hex(p.hex, &bytes);
    Buffer* b = ok ? cs.inputs[std::size_t(p.input)].get() : nullptr;
    ok = ok && p.index >= 0 && p.index < b->count() && bytes.size() == dtype_size(b->dtype());
    if (!ok) {
      *err = "the handed-over perturbation is malformed";
      return false;
    }
    std::vector<unsigned char> before(bytes.size());
    b->read_bytes(before.data(), before.size(), std::size_t(p.index) * bytes.size());
    b->write_bytes(bytes.data(), bytes.size(), std::size_t(p.index) * bytes.size());
    undo->saved.push_back({p, std::move(before)});
  }
  return true;
}

}  // namespace kernelfoundry
