// Store: the kernels table (save, filter, best correct kernel).
#include <sqlite3.h>

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "store/statement.h"
#include "store/store.h"
#include "util/strings.h"

namespace kf {

namespace {

// Column order is the order of read_kernel() and of the ?N parameters in put_kernel().
constexpr const char* kKernelColumns[] = {
    "uuid",
    "parent_uuid",
    "job_name",
    "task_hash",
    "task_name",
    "trial",
    "branch",
    "language",
    "gpu_arch",
    "model",
    "prompt",
    "answer",
    "code",
    "verdict",
    "reason",
    "runtimes_json",
    "speedup",
    "fitness",
    "eval_log",
    "profile_json",
    "template_results_json",
    "archive_cell",
    "flags_json",
    "suspect",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "created_at",
    "feedback",
    "island",
    "finish_reason",
    "speedup_lo",
    "speedup_hi",
    "speedup_confidence",
    "speedup_batches",
    "prompt_variant",
};
constexpr int kKernelColumnCount = sizeof(kKernelColumns) / sizeof(kKernelColumns[0]);
constexpr int kVerdictCorrect = 5;

const std::string& select_kernels() {
  static const std::string sql = [] {
    std::vector<std::string> names(std::begin(kKernelColumns), std::end(kKernelColumns));
    return "SELECT " + join(names, ", ") + " FROM kernels";
  }();
  return sql;
}

const std::string& upsert_kernel() {
  static const std::string sql = [] {
    std::vector<std::string> names, params, updates;
    for (int i = 0; i < kKernelColumnCount; ++i) {
      names.push_back(kKernelColumns[i]);
      params.push_back("?" + std::to_string(i + 1));
      if (i > 0)
        updates.push_back(std::string(kKernelColumns[i]) + " = excluded." + kKernelColumns[i]);
    }
    return "INSERT INTO kernels (" + join(names, ", ") + ") VALUES (" + join(params, ", ") +
           ") ON CONFLICT(uuid) DO UPDATE SET " + join(updates, ", ");
  }();
  return sql;
}

KernelRecord read_kernel(const Statement& s) {
  KernelRecord k;
  k.uuid = s.text(0);
  k.parent_uuid = s.text(1);
  k.job_name = s.text(2);
  k.task_hash = s.text(3);
  k.task_name = s.text(4);
  k.trial = static_cast<int>(s.int64(5));
  k.branch = static_cast<int>(s.int64(6));
  k.language = s.text(7);
  k.gpu_arch = s.text(8);
  k.model = s.text(9);
  k.prompt = s.text(10);
  k.answer = s.text(11);
  k.code = s.text(12);
  k.verdict = static_cast<int>(s.int64(13));
  k.reason = s.text(14);
  k.runtimes_json = s.text(15);
  k.speedup = s.optional_real(16);
  k.fitness = s.real(17);
  k.eval_log = s.text(18);
  k.profile_json = s.text(19);
  k.template_results_json = s.text(20);
  k.archive_cell = s.text(21);
  k.flags_json = s.text(22);
  // 23 (suspect) is derived from flags_json.
  k.prompt_tokens = s.int64(24);
  k.completion_tokens = s.int64(25);
  k.cost = s.real(26);
  k.created_at = s.text(27);
  k.feedback = s.text(28);
  k.island = static_cast<int>(s.int64(29));
  k.finish_reason = s.text(30);
  // The interval is there when its batch count is (schema 5; NULL for older kernels).
  if (std::optional<double> batches = s.optional_real(34)) {
    KernelRecord::Interval interval;
    interval.lo = s.optional_real(31).value_or(0);
    interval.hi = s.optional_real(32).value_or(std::numeric_limits<double>::infinity());
    interval.confidence = s.optional_real(33).value_or(0.95);
    interval.batches = static_cast<int>(*batches);
    k.speedup_interval = interval;
  }
  if (std::optional<double> variant = s.optional_real(35))
    k.prompt_variant = static_cast<int>(*variant);
  return k;
}

Result<std::vector<KernelRecord>> query_kernels(Statement& s, const std::string& what) {
  std::vector<KernelRecord> kernels;
  while (true) {
    Result<bool> row = s.step(what);
    if (!row) return row.status();
    if (!*row) return kernels;
    kernels.push_back(read_kernel(s));
  }
}

// Whether the integrity flags hold an object with "suspect": true.
Result<bool> is_suspect(const KernelRecord& kernel) {
  if (kernel.flags_json.empty() || kernel.flags_json == "null") return false;
  nlohmann::json flags =
      nlohmann::json::parse(kernel.flags_json, nullptr, /*allow_exceptions=*/false);
  if (flags.is_discarded() || !flags.is_array())
    return Result<bool>::error("cannot save kernel " + kernel.uuid +
                               ": flags_json must be a JSON array of flags, got '" +
                               truncate_middle(kernel.flags_json, 40, 20) + "'");
  for (const nlohmann::json& flag : flags) {
    if (!flag.is_object()) continue;
    auto it = flag.find("suspect");
    if (it != flag.end() && it->is_boolean() && it->get<bool>()) return true;
  }
  return false;
}

const char* order_clause(KernelOrder order) {
  switch (order) {
    case KernelOrder::kOldestFirst:
      return " ORDER BY created_at ASC, rowid ASC";
    case KernelOrder::kTrialOrder:
      return " ORDER BY trial ASC, branch ASC, created_at ASC, rowid ASC";
    case KernelOrder::kBestFirst:
      return " ORDER BY verdict DESC, speedup DESC NULLS LAST, fitness DESC, created_at ASC";
    case KernelOrder::kNewestFirst:
      break;
  }
  return " ORDER BY created_at DESC, rowid DESC";
}

}  // namespace

Status Store::put_kernel(const KernelRecord& k) {
  if (k.uuid.empty()) return Status::error("cannot save a kernel without a uuid");
  Result<bool> suspect = is_suspect(k);
  if (!suspect) return suspect.status();
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(db_, path_.string(), upsert_kernel());
  if (!s) return s.status();
  s->bind_text(1, k.uuid)
      .bind_text(2, k.parent_uuid)
      .bind_text_or_null(3, k.job_name)  // NULL: no job, so the foreign key does not apply
      .bind_text(4, k.task_hash)
      .bind_text(5, k.task_name)
      .bind_int(6, k.trial)
      .bind_int(7, k.branch)
      .bind_text(8, k.language)
      .bind_text(9, k.gpu_arch)
      .bind_text(10, k.model)
      .bind_text(11, k.prompt)
      .bind_text(12, k.answer)
      .bind_text(13, k.code)
      .bind_int(14, k.verdict)
      .bind_text(15, k.reason)
      .bind_text(16, k.runtimes_json)
      .bind_optional(17, k.speedup)
      .bind_double(18, k.fitness)
      .bind_text(19, k.eval_log)
      .bind_text(20, k.profile_json)
      .bind_text(21, k.template_results_json)
      .bind_text(22, k.archive_cell)
      .bind_text(23, k.flags_json.empty() ? "[]" : k.flags_json)
      .bind_int(24, *suspect ? 1 : 0)
      .bind_int(25, k.prompt_tokens)
      .bind_int(26, k.completion_tokens)
      .bind_double(27, k.cost)
      .bind_text(28, k.created_at.empty() ? now_iso8601() : k.created_at)
      .bind_text(29, k.feedback)
      .bind_int(30, k.island)
      .bind_text(31, k.finish_reason);
  // NULL for a kernel without an interval; an unbounded upper end is NULL too (SQL has no inf).
  const std::optional<KernelRecord::Interval>& interval = k.speedup_interval;
  auto finite_or_null = [](std::optional<double> v) {
    return v && std::isfinite(*v) ? v : std::nullopt;
  };
  s->bind_optional(32,
                   finite_or_null(interval ? std::optional<double>(interval->lo) : std::nullopt))
      .bind_optional(33,
                     finite_or_null(interval ? std::optional<double>(interval->hi) : std::nullopt))
      .bind_optional(34, interval ? std::optional<double>(interval->confidence) : std::nullopt)
      .bind_optional(35, interval ? std::optional<double>(interval->batches) : std::nullopt)
      .bind_optional(36,
                     k.prompt_variant ? std::optional<double>(*k.prompt_variant) : std::nullopt);
  Status saved = s->run("cannot save kernel " + k.uuid);
  if (!saved && sqlite3_extended_errcode(db_) == SQLITE_CONSTRAINT_FOREIGNKEY)
    return Status::error(saved.message() + " (job '" + k.job_name +
                         "' is not in the database: save the job with put_job first)");
  return saved;
}

Result<std::optional<KernelRecord>> Store::kernel(const std::string& uuid) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s =
      Statement::prepare(db_, path_.string(), select_kernels() + " WHERE uuid = ?1");
  if (!s) return s.status();
  s->bind_text(1, uuid);
  Result<std::vector<KernelRecord>> found = query_kernels(*s, "cannot read kernel " + uuid);
  if (!found) return found.status();
  if (found->empty()) return std::optional<KernelRecord>();
  return std::optional<KernelRecord>(std::move(found->front()));
}

Result<std::vector<KernelRecord>> Store::kernels(const KernelFilter& filter) {
  // Only the conditions in use go into the SQL, so the (task, arch, language, verdict) index
  // serves the common queries.
  std::vector<std::pair<const char*, const std::string*>> equal = {
      {"job_name", &filter.job_name},
      {"task_name", &filter.task_name},
      {"gpu_arch", &filter.gpu_arch},
      {"language", &filter.language},
  };
  std::vector<std::string> conditions;
  std::vector<const std::string*> texts;
  for (const auto& [column, value] : equal) {
    if (value->empty()) continue;
    texts.push_back(value);
    conditions.push_back(std::string(column) + " = ?" + std::to_string(texts.size()));
  }
  int next = static_cast<int>(texts.size()) + 1;
  if (filter.min_verdict) conditions.push_back("verdict >= ?" + std::to_string(next));
  const int first_parent = next + 1;
  if (!filter.parent_uuids.empty()) {
    std::vector<std::string> params;
    for (size_t i = 0; i < filter.parent_uuids.size(); ++i)
      params.push_back("?" + std::to_string(first_parent + static_cast<int>(i)));
    conditions.push_back("parent_uuid IN (" + join(params, ", ") + ")");
  }
  const int trial_param = first_parent + static_cast<int>(filter.parent_uuids.size());
  if (filter.before_trial) conditions.push_back("trial < ?" + std::to_string(trial_param));
  std::string sql = select_kernels();
  if (!conditions.empty()) sql += " WHERE " + join(conditions, " AND ");
  sql += order_clause(filter.order);
  if (filter.limit > 0) sql += " LIMIT " + std::to_string(filter.limit);

  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(db_, path_.string(), sql);
  if (!s) return s.status();
  for (size_t i = 0; i < texts.size(); ++i) s->bind_text(static_cast<int>(i + 1), *texts[i]);
  if (filter.min_verdict) s->bind_int(next, *filter.min_verdict);
  for (size_t i = 0; i < filter.parent_uuids.size(); ++i)
    s->bind_text(first_parent + static_cast<int>(i), filter.parent_uuids[i]);
  if (filter.before_trial) s->bind_int(trial_param, *filter.before_trial);
  return query_kernels(*s, "cannot list kernels");
}

Result<std::optional<KernelRecord>> Store::best_kernel(const std::string& task_name,
                                                       const std::string& gpu_arch,
                                                       const std::string& language,
                                                       const std::string& job_name) {
  return best_kernel(
      task_name, gpu_arch, language,
      job_name.empty() ? std::vector<std::string>{} : std::vector<std::string>{job_name});
}

Result<std::optional<KernelRecord>> Store::best_kernel(const std::string& task_name,
                                                       const std::string& gpu_arch,
                                                       const std::string& language,
                                                       const std::vector<std::string>& job_names) {
  std::string sql = select_kernels() +
                    " WHERE task_name = ?1 AND gpu_arch = ?2 AND language = ?3 AND verdict = ?4"
                    " AND suspect = 0";
  if (!job_names.empty()) {
    std::vector<std::string> params;
    for (size_t i = 0; i < job_names.size(); ++i) params.push_back("?" + std::to_string(5 + i));
    sql += " AND job_name IN (" + join(params, ", ") + ")";
  }
  // Ties go to the earliest kernel that reached the speedup.
  sql += " ORDER BY speedup DESC NULLS LAST, fitness DESC, created_at ASC, rowid ASC LIMIT 1";

  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(db_, path_.string(), sql);
  if (!s) return s.status();
  s->bind_text(1, task_name)
      .bind_text(2, gpu_arch)
      .bind_text(3, language)
      .bind_int(4, kVerdictCorrect);
  for (size_t i = 0; i < job_names.size(); ++i) s->bind_text(static_cast<int>(5 + i), job_names[i]);
  Result<std::vector<KernelRecord>> found = query_kernels(*s, "cannot find the best kernel");
  if (!found) return found.status();
  if (found->empty()) return std::optional<KernelRecord>();
  return std::optional<KernelRecord>(std::move(found->front()));
}

}  // namespace kf
