// The loop's memory of what did not work: for a branch's prompt, the recent attempts from the
// branch's parent and from its ancestors that failed or were not faster than the kernel they
// started from (DESIGN.md §10), read back from the kernel database.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "store/store.h"
#include "util/status.h"

namespace kf {

struct AttemptQuery {
  std::string job_name;
  // The branch's parent; "" = the branch has no parent, so attempts written from scratch.
  std::string parent_uuid;
  int before_trial =
      0;  // only attempts of earlier iterations: branches of one do not see each other
  size_t max_attempts = 4;
  int lineage_depth = 3;  // how many kernels of the lineage: the parent, its parent, ...
};

struct Attempt {
  KernelRecord kernel;
  KernelRecord started_from;  // the kernel it started from (empty uuid: none, from scratch)
  int depth = 0;              // 0: started from the branch's parent; 1: from its parent; ...
};

// Up to q.max_attempts attempts, the closest (by depth) and then the most recent first: this
// job's kernels of earlier iterations that started from the parent or one of its ancestors in
// this job, had an answer from the model, and failed or were not faster than the kernel they
// started from (eval/paired.h: faster_than). Kernels of the lineage itself are not attempts.
Result<std::vector<Attempt>> recent_attempts(Store& store, const AttemptQuery& q);

// Whether `child` is faster than `started_from`: correct, not suspect, and faster by the
// intervals when both have one, by the point estimates otherwise.
bool improved_on(const KernelRecord& child, const KernelRecord& started_from);

// The model's own one-line summary of its answer: the first line of prose outside code blocks
// (markdown emphasis and a "Summary:" label removed); "" when the answer has none.
std::string answer_summary(const std::string& answer);

}  // namespace kf
