// The MAP-Elites archive: replacement rule, best-elite queries and ring migration.
#include "search/archive.h"

#include <algorithm>

#include "eval/verdict.h"

namespace kf {
namespace {

const Elite* best_of(const std::vector<const Elite*>& elites) {
  const Elite* best = nullptr;
  for (const Elite* e : elites) {
    if (best == nullptr || preferred_elite(*e, *best)) best = e;
  }
  return best;
}

// Fitness, then verdict, then speedup, on point estimates: a strict weak order.
bool point_order(const Elite& a, const Elite& b) {
  if (a.fitness != b.fitness) return a.fitness > b.fitness;
  if (a.verdict != b.verdict) return a.verdict > b.verdict;
  if (a.speedup.has_value() != b.speedup.has_value()) return a.speedup.has_value();
  return a.speedup.has_value() && *a.speedup > *b.speedup;
}

}  // namespace

bool better_elite(const Elite& a, const Elite& b) {
  if (a.suspect != b.suspect) return !a.suspect;
  // Fitness is verdict + speedup, so between two trusted correct kernels it is the point
  // estimate; with both intervals, a noisy lead is not enough to take the cell.
  const bool a_trusted = a.verdict == kCorrect && !a.suspect;
  const bool b_trusted = b.verdict == kCorrect && !b.suspect;
  if (a_trusted && b_trusted && a.speedup && b.speedup && a.interval && b.interval)
    return faster_than(a.speedup, a.interval, b.speedup, b.interval);
  return point_order(a, b);
}

bool preferred_elite(const Elite& a, const Elite& b) {
  const bool a_trusted = a.verdict == kCorrect && !a.suspect;
  const bool b_trusted = b.verdict == kCorrect && !b.suspect;
  if (a_trusted != b_trusted) return a_trusted;
  if (a.fitness != b.fitness) return a.fitness > b.fitness;
  if (a.suspect != b.suspect) return !a.suspect;
  return point_order(a, b);
}

Archive::Archive(ArchiveOptions options) : options_(options) {
  options_.num_islands = std::max(options_.num_islands, 1);
  options_.migrants = std::max(options_.migrants, 0);
}

int Archive::wrap_island(int island) const {
  const int n = options_.num_islands;
  return ((island % n) + n) % n;
}

bool Archive::add(const Elite& candidate) {
  Elite elite = candidate;
  elite.island = wrap_island(candidate.island);
  auto key = std::make_pair(elite.island, elite.descriptor.cell());
  auto it = cells_.find(key);
  if (it == cells_.end()) {
    cells_.emplace(std::move(key), std::move(elite));
    return true;
  }
  if (!better_elite(elite, it->second)) return false;
  it->second = std::move(elite);
  return true;
}

const Elite* Archive::best() const {
  return best_of(elites(-1));
}

const Elite* Archive::best_on(int island) const {
  if (island < 0 || island >= options_.num_islands) return nullptr;
  return best_of(elites(island));
}

std::vector<const Elite*> Archive::elites(int island) const {
  std::vector<const Elite*> out;
  for (const auto& [key, elite] : cells_) {
    if (island < 0 || key.first == island) out.push_back(&elite);
  }
  return out;
}

void Archive::migrate() {
  const int n = options_.num_islands;
  if (n < 2 || options_.migrants == 0) return;
  std::vector<Elite> moving;
  for (int island = 0; island < n; ++island) {
    std::vector<const Elite*> ranked = elites(island);
    std::stable_sort(ranked.begin(), ranked.end(),
                     [](const Elite* a, const Elite* b) { return preferred_elite(*a, *b); });
    const size_t count = std::min<size_t>(ranked.size(), options_.migrants);
    for (size_t i = 0; i < count; ++i) {
      Elite copy = *ranked[i];
      copy.island = (island + 1) % n;
      moving.push_back(std::move(copy));
    }
  }
  for (const Elite& e : moving) add(e);
}

bool Archive::should_migrate(int trial) const {
  return options_.num_islands > 1 && options_.migration_interval > 0 && options_.migrants > 0 &&
         trial > 0 && trial % options_.migration_interval == 0;
}

}  // namespace kf
