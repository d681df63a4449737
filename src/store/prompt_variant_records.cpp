// Store: the prompt_variants table (the guidance variants of meta-prompt evolution, per job).
#include "store/statement.h"
#include "store/store.h"

namespace kf {

Status Store::put_prompt_variant(const PromptVariantRecord& v) {
  if (v.job_name.empty() || v.variant_id <= 0)
    return Status::error("cannot save a prompt variant without a job_name and a variant_id > 0");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      "INSERT OR REPLACE INTO prompt_variants (job_name, variant_id, parent_id, text, "
      "created_trial, score, uses, dropped, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
      "?9)");
  if (!s) return s.status();
  s->bind_text(1, v.job_name)
      .bind_int(2, v.variant_id)
      .bind_optional(3, v.parent_id ? std::optional<double>(*v.parent_id) : std::nullopt)
      .bind_text(4, v.text)
      .bind_int(5, v.created_trial)
      .bind_optional(6, v.score)
      .bind_int(7, v.uses)
      .bind_int(8, v.dropped ? 1 : 0)
      .bind_text(9, v.created_at.empty() ? now_iso8601() : v.created_at);
  return s->run("cannot save prompt variant " + std::to_string(v.variant_id) + " of job " +
                v.job_name);
}

Result<std::vector<PromptVariantRecord>> Store::prompt_variants(const std::string& job_name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      "SELECT job_name, variant_id, parent_id, text, created_trial, score, uses, dropped, "
      "created_at FROM prompt_variants WHERE job_name = ?1 ORDER BY variant_id");
  if (!s) return s.status();
  s->bind_text(1, job_name);
  std::vector<PromptVariantRecord> out;
  const std::string what = "cannot read the prompt variants of job " + job_name;
  while (true) {
    Result<bool> row = s->step(what);
    if (!row) return row.status();
    if (!*row) return out;
    PromptVariantRecord v;
    v.job_name = s->text(0);
    v.variant_id = static_cast<int>(s->int64(1));
    if (std::optional<double> parent = s->optional_real(2)) v.parent_id = static_cast<int>(*parent);
    v.text = s->text(3);
    v.created_trial = static_cast<int>(s->int64(4));
    v.score = s->optional_real(5);
    v.uses = static_cast<int>(s->int64(6));
    v.dropped = s->int64(7) != 0;
    v.created_at = s->text(8);
    out.push_back(std::move(v));
  }
}

}  // namespace kf
