// Store: the llm_calls table (every paid answer of a job, so a resumed job never pays twice).
#include <sqlite3.h>

#include "store/statement.h"
#include "store/store.h"

namespace kf {

namespace {

constexpr const char* kSelectCalls =
    "SELECT job_name, call_key, purpose, trial, branch, parent_uuid, server, model, "
    "system_prompt, prompt, answer, finish_reason, truncated, prompt_tokens, completion_tokens, "
    "cost, attempts, latency_s, created_at, cached_tokens, cache_write_tokens, reasoning_tokens "
    "FROM llm_calls";

LlmCallRecord read_call(const Statement& s) {
  LlmCallRecord c;
  c.job_name = s.text(0);
  c.call_key = s.text(1);
  c.purpose = s.text(2);
  c.trial = static_cast<int>(s.int64(3));
  c.branch = static_cast<int>(s.int64(4));
  c.parent_uuid = s.text(5);
  c.server = s.text(6);
  c.model = s.text(7);
  c.system_prompt = s.text(8);
  c.prompt = s.text(9);
  c.answer = s.text(10);
  c.finish_reason = s.text(11);
  c.truncated = s.int64(12) != 0;
  c.prompt_tokens = s.int64(13);
  c.completion_tokens = s.int64(14);
  c.cost = s.real(15);
  c.attempts = static_cast<int>(s.int64(16));
  c.latency_s = s.real(17);
  c.created_at = s.text(18);
  c.cached_tokens = s.int64(19);
  c.cache_write_tokens = s.int64(20);
  c.reasoning_tokens = s.int64(21);
  return c;
}

Result<std::vector<LlmCallRecord>> query_calls(Statement& s, const std::string& what) {
  std::vector<LlmCallRecord> calls;
  while (true) {
    Result<bool> row = s.step(what);
    if (!row) return row.status();
    if (!*row) return calls;
    calls.push_back(read_call(s));
  }
}

}  // namespace

Status Store::put_llm_call(const LlmCallRecord& c) {
  if (c.job_name.empty() || c.call_key.empty())
    return Status::error("cannot save an LLM call without a job_name and a call_key");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      "INSERT OR REPLACE INTO llm_calls (job_name, call_key, purpose, trial, branch, parent_uuid, "
      "server, model, system_prompt, prompt, answer, finish_reason, truncated, prompt_tokens, "
      "completion_tokens, cost, attempts, latency_s, created_at, cached_tokens, "
      "cache_write_tokens, "
      "reasoning_tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
      "?16, ?17, ?18, ?19, ?20, ?21, ?22)");
  if (!s) return s.status();
  s->bind_text(1, c.job_name)
      .bind_text(2, c.call_key)
      .bind_text(3, c.purpose)
      .bind_int(4, c.trial)
      .bind_int(5, c.branch)
      .bind_text(6, c.parent_uuid)
      .bind_text(7, c.server)
      .bind_text(8, c.model)
      .bind_text(9, c.system_prompt)
      .bind_text(10, c.prompt)
      .bind_text(11, c.answer)
      .bind_text(12, c.finish_reason)
      .bind_int(13, c.truncated ? 1 : 0)
      .bind_int(14, c.prompt_tokens)
      .bind_int(15, c.completion_tokens)
      .bind_double(16, c.cost)
      .bind_int(17, c.attempts)
      .bind_double(18, c.latency_s)
      .bind_text(19, c.created_at.empty() ? now_iso8601() : c.created_at)
      .bind_int(20, c.cached_tokens)
      .bind_int(21, c.cache_write_tokens)
      .bind_int(22, c.reasoning_tokens);
  Status saved = s->run("cannot save LLM call " + c.call_key + " of job " + c.job_name);
  if (!saved && sqlite3_extended_errcode(db_) == SQLITE_CONSTRAINT_FOREIGNKEY)
    return Status::error(saved.message() + " (job '" + c.job_name +
                         "' is not in the database: save the job with put_job first)");
  return saved;
}

Result<std::optional<LlmCallRecord>> Store::llm_call(const std::string& job_name,
                                                     const std::string& call_key) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(), std::string(kSelectCalls) + " WHERE job_name = ?1 AND call_key = ?2");
  if (!s) return s.status();
  s->bind_text(1, job_name).bind_text(2, call_key);
  auto found = query_calls(*s, "cannot read LLM call " + call_key);
  if (!found) return found.status();
  if (found->empty()) return std::optional<LlmCallRecord>();
  return std::optional<LlmCallRecord>(std::move(found->front()));
}

Result<std::vector<LlmCallRecord>> Store::llm_calls(const std::string& job_name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      std::string(kSelectCalls) + " WHERE job_name = ?1 ORDER BY created_at ASC, rowid ASC");
  if (!s) return s.status();
  s->bind_text(1, job_name);
  return query_calls(*s, "cannot list the LLM calls of job " + job_name);
}

Result<Store::LlmTotals> Store::llm_totals(const std::string& job_name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      "SELECT count(*), coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), "
      "coalesce(sum(cost), 0), coalesce(sum(cached_tokens), 0), "
      "coalesce(sum(cache_write_tokens), 0), coalesce(sum(reasoning_tokens), 0) FROM llm_calls "
      "WHERE job_name = ?1");
  if (!s) return s.status();
  s->bind_text(1, job_name);
  auto row = s->step("cannot sum the LLM calls of job " + job_name);
  if (!row) return row.status();
  LlmTotals t;
  t.calls = s->int64(0);
  t.prompt_tokens = s->int64(1);
  t.completion_tokens = s->int64(2);
  t.cost = s->real(3);
  t.cached_tokens = s->int64(4);
  t.cache_write_tokens = s->int64(5);
  t.reasoning_tokens = s->int64(6);
  return t;
}

}  // namespace kf
