// Earlier attempts for a prompt: walk the parent's lineage in this job, list the children of each
// kernel on it from earlier iterations, and keep those that did not improve on where they started.
#include "search/attempts.h"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "eval/eval.h"
#include "eval/paired.h"
#include "eval/verdict.h"
#include "search/job.h"
#include "util/strings.h"

namespace kf {
namespace {

// Read this many rows at most per query: enough to find max_attempts after the improvements are
// skipped, however long the job.
constexpr int kRowsPerAttempt = 4;
constexpr int kMinRows = 16;

bool suspect(const KernelRecord& k) {
  return flags_suspect(
      nlohmann::json::parse(k.flags_json.empty() ? "[]" : k.flags_json, nullptr, false));
}

// A branch whose LLM call never answered, or whose prompt could not be built: no mistake of the
// model's to learn from.
bool without_answer(const KernelRecord& k) {
  return trim(k.answer).empty();
}

}  // namespace

bool improved_on(const KernelRecord& child, const KernelRecord& started_from) {
  if (child.verdict != kCorrect || !child.speedup || suspect(child)) return false;
  if (started_from.uuid.empty() || started_from.verdict != kCorrect || suspect(started_from))
    return true;
  return faster_than(child.speedup, speedup_interval_of(child), started_from.speedup,
                     speedup_interval_of(started_from));
}

Result<std::vector<Attempt>> recent_attempts(Store& store, const AttemptQuery& q) {
  using R = Result<std::vector<Attempt>>;
  if (q.max_attempts == 0) return std::vector<Attempt>{};
  // The lineage: the parent, its parent, ... while they are kernels of this job.
  std::vector<KernelRecord> lineage;
  if (q.parent_uuid.empty()) {
    lineage.push_back(KernelRecord{});  // attempts from scratch start from "no kernel"
  } else {
    std::string uuid = q.parent_uuid;
    for (int depth = 0; depth < std::max(1, q.lineage_depth) && !uuid.empty(); ++depth) {
      auto k = store.kernel(uuid);
      if (!k) return R::error(k.message());
      if (!k->has_value() || (*k)->job_name != q.job_name) break;
      uuid = (*k)->parent_uuid;
      lineage.push_back(std::move(**k));
    }
    if (lineage.empty()) return std::vector<Attempt>{};
  }
  std::map<std::string, size_t> depth_of;
  KernelFilter filter;
  filter.job_name = q.job_name;
  filter.before_trial = q.before_trial;
  filter.order = KernelOrder::kNewestFirst;
  filter.limit = std::max(kMinRows, kRowsPerAttempt * static_cast<int>(q.max_attempts));
  for (size_t d = 0; d < lineage.size(); ++d) {
    depth_of[lineage[d].uuid] = d;
    filter.parent_uuids.push_back(lineage[d].uuid);
  }
  auto rows = store.kernels(filter);
  if (!rows) return R::error(rows.message());

  std::vector<Attempt> out;
  for (KernelRecord& k : *rows) {
    if (k.trial == 0 || without_answer(k) || depth_of.count(k.uuid)) continue;
    auto d = depth_of.find(k.parent_uuid);
    if (d == depth_of.end()) continue;
    const KernelRecord& from = lineage[d->second];
    if (improved_on(k, from)) continue;
    out.push_back(Attempt{std::move(k), from, static_cast<int>(d->second)});
  }
  std::stable_sort(out.begin(), out.end(), [](const Attempt& a, const Attempt& b) {
    if (a.depth != b.depth) return a.depth < b.depth;
    if (a.kernel.trial != b.kernel.trial) return a.kernel.trial > b.kernel.trial;
    return a.kernel.branch < b.kernel.branch;
  });
  if (out.size() > q.max_attempts) out.resize(q.max_attempts);
  return out;
}

std::string answer_summary(const std::string& answer) {
  bool in_fence = false;
  for (const std::string& raw : split_lines(answer)) {
    std::string line = trim(raw);
    if (starts_with(line, "```") || starts_with(line, "~~~")) {
      in_fence = !in_fence;
      continue;
    }
    if (in_fence || line.empty()) continue;
    // Markdown decoration: headings, list bullets, emphasis.
    while (!line.empty() &&
           (line[0] == '#' || line[0] == '>' || line[0] == '-' || line[0] == '*' || line[0] == '_'))
      line = trim(line.substr(1));
    line = replace_all(replace_all(line, "**", ""), "__", "");
    if (starts_with(to_lower(line), "summary:")) line = trim(line.substr(8));
    if (line.empty() || line[0] == '<') continue;  // a tag such as <opencl>
    return line;
  }
  return "";
}

}  // namespace kf
