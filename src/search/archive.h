// The MAP-Elites archive: one elite per (island, descriptor cell), with ring migration between
// islands (DESIGN.md §10).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "eval/paired.h"
#include "search/descriptors.h"

namespace kf {

struct Elite {
  std::string uuid;                         // the kernel's id in the store
  std::vector<std::string> codes;           // one per EVOLVE block
  int verdict = 0;                          // 0..5 (eval/verdict.h)
  std::optional<double> speedup;            // over the reference, when measured
  std::optional<SpeedupInterval> interval;  // its confidence interval, when timed side by side
  double fitness = 0;
  Descriptor descriptor;
  int island = 0;
  int trial = 0;         // the iteration that produced it
  bool suspect = false;  // flagged (e.g. implausibly fast): never displaces a trusted kernel
};

// Whether `a` should take `b`'s place: trusted before suspect; two trusted correct elites that
// both carry a speedup interval by those intervals (faster only when clearly_faster(), so noise
// never displaces an elite); otherwise fitness, verdict, speedup. Ties and unclear cases keep
// the incumbent.
bool better_elite(const Elite& a, const Elite& b);

// The order best() and migration pick by: trusted correct (verdict 5, not suspect) elites first,
// then fitness, then better_elite. On point estimates: it sorts, and a sort needs a strict weak
// order, which "clearly faster" (incomparable when the intervals overlap) is not.
bool preferred_elite(const Elite& a, const Elite& b);

struct ArchiveOptions {
  int num_islands = 2;
  int migration_interval = 3;  // iterations
  int migrants = 1;            // elites each island sends per migration
};

class Archive {
 public:
  explicit Archive(ArchiveOptions options = {});

  // Keeps the candidate if its cell on its island is empty or it beats the cell's elite (see
  // better_elite). An island outside [0, num_islands) is wrapped into range. Returns true when it
  // became the cell's elite.
  bool add(const Elite& candidate);

  // Highest fitness among trusted correct (verdict 5) elites, else highest fitness overall;
  // nullptr when empty.
  const Elite* best() const;
  const Elite* best_on(int island) const;

  // Island -1 = all islands. Ordered by island, then cell.
  std::vector<const Elite*> elites(int island = -1) const;
  size_t size() const { return cells_.size(); }
  int num_islands() const { return options_.num_islands; }
  const ArchiveOptions& options() const { return options_; }

  // Copies each island's best `migrants` elites to the next island (ring), under the add() rule.
  // Migrants are chosen before any is placed, so one call moves an elite a single step.
  void migrate();
  // True when migration is due after iteration `trial` (trial > 0, a multiple of the interval,
  // and more than one island).
  bool should_migrate(int trial) const;

 private:
  int wrap_island(int island) const;

  ArchiveOptions options_;
  std::map<std::pair<int, std::string>, Elite> cells_;  // (island, cell) -> elite
};

}  // namespace kf
