// Store: the reference_timings table (reference timings kept across jobs, by timing key).
#include "store/statement.h"
#include "store/store.h"

namespace kf {

Status Store::put_reference_timing(const ReferenceTimingRecord& t) {
  if (t.timing_key.empty() || t.task_hash.empty())
    return Status::error("cannot save a reference timing without a timing_key and a task_hash");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      "INSERT OR REPLACE INTO reference_timings (timing_key, task_hash, language, gpu_arch, "
      "device, key_json, timings_json, job_name, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
      "?8, ?9)");
  if (!s) return s.status();
  s->bind_text(1, t.timing_key)
      .bind_text(2, t.task_hash)
      .bind_text(3, t.language)
      .bind_text(4, t.gpu_arch)
      .bind_text(5, t.device)
      .bind_text(6, t.key_json)
      .bind_text(7, t.timings_json)
      .bind_text(8, t.job_name)
      .bind_text(9, t.created_at.empty() ? now_iso8601() : t.created_at);
  return s->run("cannot save the reference timing of task " + t.task_hash);
}

Result<std::vector<ReferenceTimingRecord>> Store::reference_timings(const std::string& task_hash) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      "SELECT timing_key, task_hash, language, gpu_arch, device, key_json, timings_json, "
      "job_name, created_at FROM reference_timings WHERE task_hash = ?1 "
      "ORDER BY created_at DESC, rowid DESC");
  if (!s) return s.status();
  s->bind_text(1, task_hash);
  std::vector<ReferenceTimingRecord> out;
  const std::string what = "cannot read the reference timings of task " + task_hash;
  while (true) {
    Result<bool> row = s->step(what);
    if (!row) return row.status();
    if (!*row) return out;
    ReferenceTimingRecord t;
    t.timing_key = s->text(0);
    t.task_hash = s->text(1);
    t.language = s->text(2);
    t.gpu_arch = s->text(3);
    t.device = s->text(4);
    t.key_json = s->text(5);
    t.timings_json = s->text(6);
    t.job_name = s->text(7);
    t.created_at = s->text(8);
    out.push_back(std::move(t));
  }
}

}  // namespace kf
