// Parent and inspiration sampling over the archive: exploitation, exploration and random draws,
// deterministic for a given generator state.
#pragma once

#include <cstddef>
#include <random>
#include <vector>

#include "search/archive.h"

namespace kf {

struct SamplingOptions {
  double exploit = 0.7;      // softmax over fitness
  double explore = 0.2;      // uniform over cells other than the best's; the rest is uniform random
  double temperature = 1.0;  // of the softmax; <= 0 picks the fittest
  bool improve_only_correct = false;  // parents only from verdict-5 elites
};

// Picks a parent from island `island`, falling back to the whole archive when the island has no
// eligible elite. nullptr when nothing is eligible. Only draws from `rng` through operator(), so a
// seed gives the same parents with every standard library.
const Elite* sample_parent(const Archive& archive, int island, std::mt19937_64& rng,
                           const SamplingOptions& options);

// Up to n distinct kernels (by uuid) from cells other than the parent's, on any island, never the
// parent itself. Drawn without replacement with weights favouring trusted correct and fitter
// elites; returned best first. A null parent excludes nothing.
std::vector<const Elite*> sample_inspirations(const Archive& archive, const Elite* parent, size_t n,
                                              std::mt19937_64& rng);

}  // namespace kf
