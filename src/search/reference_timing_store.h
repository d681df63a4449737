// The reference timings a job keeps for later jobs, in the kernel database (its
// reference_timings table): the evaluator's ReferenceTimingCache over a Store.
#pragma once

#include "eval/reference_timing.h"
#include "store/store.h"

namespace kf {

class StoreReferenceTimings : public ReferenceTimingCache {
 public:
  explicit StoreReferenceTimings(Store& store) : store_(store) {}
  Result<std::vector<ReferenceTimingEntry>> entries(const std::string& task_hash) override;
  Status save(const ReferenceTimingEntry& entry) override;

 private:
  Store& store_;
};

}  // namespace kf
