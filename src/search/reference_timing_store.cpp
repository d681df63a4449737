// The kept reference timings of a job, to and from the kernel database's reference_timings rows.
#include "search/reference_timing_store.h"

namespace kf {

Result<std::vector<ReferenceTimingEntry>> StoreReferenceTimings::entries(
    const std::string& task_hash) {
  auto rows = store_.reference_timings(task_hash);
  if (!rows) return rows.status();
  std::vector<ReferenceTimingEntry> out;
  for (const ReferenceTimingRecord& row : *rows) {
    // A row that does not parse (edited by hand, cut short) is a timing never to reuse.
    auto key = nlohmann::json::parse(row.key_json, nullptr, /*allow_exceptions=*/false);
    auto timings = nlohmann::json::parse(row.timings_json, nullptr, /*allow_exceptions=*/false);
    if (!key.is_object() || !timings.is_object()) continue;
    ReferenceTimingEntry e;
    e.key = ReferenceTimingKey::from_json(key);
    // The row is found by its digest: one whose key was edited no longer matches its own.
    if (e.key.digest() != row.timing_key) continue;
    e.timings = timings_from_json(timings);
    e.job_name = row.job_name;
    e.created_at = row.created_at;
    out.push_back(std::move(e));
  }
  return out;
}

Status StoreReferenceTimings::save(const ReferenceTimingEntry& e) {
  ReferenceTimingRecord row;
  row.timing_key = e.key.digest();
  row.task_hash = e.key.task_hash;
  row.language = e.key.language;
  row.gpu_arch = e.key.gpu_arch;
  row.device = e.key.device;
  // Device names and the like come from the driver: JSON must not throw on bytes that are not
  // UTF-8 (they are replaced).
  row.key_json = e.key.to_json().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  row.timings_json =
      timings_to_json(e.timings).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  row.job_name = e.job_name;
  row.created_at = e.created_at;
  return store_.put_reference_timing(row);
}

}  // namespace kf
