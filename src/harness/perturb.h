// Inputs that change between timed calls (the split judge's candidate child) and the same change
// re-applied by the checker, so a memo keyed on the inputs never hits and the checker compares
// the picked timed call against the reference on exactly the inputs that call saw.
#pragma once

#include <random>
#include <string>
#include <utility>
#include <vector>

#include "harness/case_state.h"
#include "harness/dump.h"

namespace kernelfoundry {

// What a perturbation overwrote, so it can be put back (the inputs' checksums must hold after).
struct PerturbUndo {
  std::vector<std::pair<Perturbation, std::vector<unsigned char>>> saved;  // original bytes
};

// Candidate side, before a timed call: restores what `undo` holds, then gives every drawn input
// of `cs` new values at some elements (drawn from its own distribution). Returns what changed.
std::vector<Perturbation> perturb_inputs(CaseState& cs, std::mt19937_64& rng, PerturbUndo* undo);
// Puts back what `undo` holds and empties it.
void restore_inputs(CaseState& cs, PerturbUndo* undo);

// Checker side: applies `perturb` (as handed over by the candidate's run, so untrusted) to the
// inputs of `cs`, saving the overwritten bytes in `undo`. False with `err` when malformed.
bool apply_perturbation(CaseState& cs, const std::vector<Perturbation>& perturb, PerturbUndo* undo,
                        std::string* err);
// The most a handed-over perturbation may list for `cs` (a larger one is malformed).
std::size_t max_perturbation_size(const CaseState& cs);

}  // namespace kernelfoundry
