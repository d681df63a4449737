// Inputs that change between timed calls (the split judge's candidate child) and the same change
// re-applied by the checker, so a memo keyed on the inputs never hits, an incremental memo (diff
// against a private copy, recompute what changed) must redo nearly all the work, and the checker
// compares the picked timed call against the reference on exactly the inputs that call saw.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "harness/case_state.h"
#include "harness/dump.h"

namespace kernelfoundry {

// Before every timed call each perturbed input gets new values at the elements offset + k *
// stride: stride a prime in [kMinPerturbStride, kMaxPerturbStride] (never a divisor of a
// power-of-two row length, and below 64, so every 64 consecutive elements hold at least one new
// value), offset in [0, stride). Both change every call.
constexpr long kMinPerturbStride = 31;
constexpr long kMaxPerturbStride = 61;
bool is_perturb_stride(long stride);
// The number of elements offset, offset + stride, ... below `elements`.
long perturbed_count(long elements, long offset, long stride);
// Whether the harness perturbs input `i` of `cs` (drawn from a non-constant distribution, not
// empty).
bool perturbable(const CaseState& cs, std::size_t i);

// What a perturbation overwrote, so it can be put back (the inputs' checksums must hold after).
// Device memory (no host view) is put back from a pristine device copy of the input when one
// could be made (perturb_inputs makes it on first use; then nothing is read back before a
// write), else from the saved bytes.
class PerturbUndo {
 public:
  PerturbUndo() = default;
  ~PerturbUndo();
  PerturbUndo(const PerturbUndo&) = delete;
  PerturbUndo& operator=(const PerturbUndo&) = delete;

  // The original bytes; empty where pristine_of(input) holds them.
  std::vector<std::pair<Perturbation, std::vector<unsigned char>>> saved;

  // A device copy of input `i` as uploaded, or null (none made, or no memory for it).
  void* pristine_of(std::size_t i) const { return i < pristine_.size() ? pristine_[i] : nullptr; }
  // Makes it (once per input; a failed allocation is not retried). Null when it cannot.
  void* make_pristine(Device& device, void* input, std::size_t i, std::size_t bytes);

 private:
  Device* device_ = nullptr;
  std::vector<void*> pristine_;
  std::vector<bool> tried_;
};

// Candidate side, before a timed call: restores what `undo` holds, then gives every perturbable
// input of `cs` new values (drawn from its own distribution with a seed from `rng`) at a new
// strided set of elements. Device memory: one strided upload per input and one device-side
// strided copy to put the previous call's elements back (from a pristine copy made on the
// first call; without one, a strided download saves what is overwritten).
// Returns what changed, one Perturbation per perturbed input.
std::vector<Perturbation> perturb_inputs(CaseState& cs, std::mt19937_64& rng, PerturbUndo* undo);
// Puts back what `undo` holds and empties it.
void restore_inputs(CaseState& cs, PerturbUndo* undo);

// Checker side: applies `perturb` (as handed over by the candidate's run, so untrusted) to the
// inputs of `cs` before the checker reruns a timed call, saving the overwritten bytes in `undo`.
// It must be what perturb_inputs makes: every perturbable input exactly once (so an empty list
// only where no input is perturbable), a stride the harness uses, an offset below it, and the count
// that reaches the input's end. False with `err` (nothing applied) when it is not.
bool apply_perturbation(CaseState& cs, const std::vector<Perturbation>& perturb, PerturbUndo* undo,
                        std::string* err);
// The most entries a handed-over perturbation may list for `cs` (one per input).
std::size_t max_perturbation_size(const CaseState& cs);

}  // namespace kernelfoundry
