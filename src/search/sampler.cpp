// Parent and inspiration sampling: hand-rolled draws on the raw generator, so results do not
// depend on the standard library's distribution implementations.
#include "search/sampler.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "eval/verdict.h"

namespace kf {
namespace {

double uniform01(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;  // 53 random bits in [0, 1)
}

size_t uniform_index(std::mt19937_64& rng, size_t n) {
  return std::min(static_cast<size_t>(uniform01(rng) * static_cast<double>(n)), n - 1);
}

size_t weighted_index(std::mt19937_64& rng, const std::vector<double>& weights) {
  double total = 0;
  for (double w : weights) total += w;
  double u = uniform01(rng) * total;
  size_t last_positive = 0;
  for (size_t i = 0; i < weights.size(); ++i) {
    if (weights[i] <= 0) continue;
    if (u < weights[i]) return i;
    u -= weights[i];
    last_positive = i;
  }
  return last_positive;  // only reached through rounding
}

std::vector<const Elite*> eligible(const std::vector<const Elite*>& elites, bool only_correct) {
  std::vector<const Elite*> out;
  for (const Elite* e : elites) {
    if (!only_correct || e->verdict == kCorrect) out.push_back(e);
  }
  return out;
}

const Elite* fittest(const std::vector<const Elite*>& pool) {
  const Elite* best = pool.front();
  for (const Elite* e : pool) {
    if (e->fitness > best->fitness) best = e;
  }
  return best;
}

const Elite* softmax_pick(const std::vector<const Elite*>& pool, double temperature,
                          std::mt19937_64& rng) {
  const double top = fittest(pool)->fitness;
  if (temperature <= 0) {
    rng();  // keep the number of draws per call fixed
    return fittest(pool);
  }
  std::vector<double> weights;
  for (const Elite* e : pool) weights.push_back(std::exp((e->fitness - top) / temperature));
  return pool[weighted_index(rng, weights)];
}

const Elite* explore_pick(const std::vector<const Elite*>& pool, std::mt19937_64& rng) {
  const std::string best_cell = fittest(pool)->descriptor.cell();
  std::vector<const Elite*> others;
  for (const Elite* e : pool) {
    if (e->descriptor.cell() != best_cell) others.push_back(e);
  }
  const std::vector<const Elite*>& from = others.empty() ? pool : others;
  return from[uniform_index(rng, from.size())];
}

}  // namespace

const Elite* sample_parent(const Archive& archive, int island, std::mt19937_64& rng,
                           const SamplingOptions& options) {
  std::vector<const Elite*> pool;
  if (island >= 0 && island < archive.num_islands())
    pool = eligible(archive.elites(island), options.improve_only_correct);
  if (pool.empty()) pool = eligible(archive.elites(-1), options.improve_only_correct);
  if (pool.empty()) return nullptr;
  const double mode = uniform01(rng);
  if (mode < options.exploit) return softmax_pick(pool, options.temperature, rng);
  if (mode < options.exploit + options.explore) return explore_pick(pool, rng);
  return pool[uniform_index(rng, pool.size())];
}

std::vector<const Elite*> sample_inspirations(const Archive& archive, const Elite* parent, size_t n,
                                              std::mt19937_64& rng) {
  const std::string parent_cell = parent ? parent->descriptor.cell() : std::string();
  // Candidates in preference order; migrated copies of one kernel collapse to its best copy.
  std::vector<const Elite*> candidates;
  for (const Elite* e : archive.elites(-1)) {
    if (parent != nullptr && (e == parent || e->descriptor.cell() == parent_cell ||
                              (!parent->uuid.empty() && e->uuid == parent->uuid)))
      continue;
    candidates.push_back(e);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Elite* a, const Elite* b) { return preferred_elite(*a, *b); });
  std::set<std::string> seen;
  std::vector<const Elite*> unique;
  for (const Elite* e : candidates) {
    if (e->uuid.empty() || seen.insert(e->uuid).second) unique.push_back(e);
  }
  if (unique.size() <= n) return unique;

  // Weight: x3 for a trusted correct kernel, and from 2 (first) down to ~1 (last) by rank.
  const double m = static_cast<double>(unique.size());
  std::vector<double> weights;
  for (size_t i = 0; i < unique.size(); ++i) {
    const bool trusted = unique[i]->verdict == kCorrect && !unique[i]->suspect;
    weights.push_back((trusted ? 3.0 : 1.0) * (1.0 + (m - static_cast<double>(i)) / m));
  }
  std::vector<size_t> picked;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = weighted_index(rng, weights);
    picked.push_back(i);
    weights[i] = 0;
  }
  std::sort(picked.begin(), picked.end());
  std::vector<const Elite*> out;
  for (size_t i : picked) out.push_back(unique[i]);
  return out;
}

}  // namespace kf
