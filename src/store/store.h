// The kernel database (SQLite at paths.kernels_db_path): jobs, tasks, every evaluated kernel and
// the reference timings kept across jobs, versioned with forward migrations. One Store is one
// connection; several Stores (threads or processes) may share a file.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "util/status.h"

struct sqlite3;

namespace kf {

// One optimisation job. put_job() stamps updated_at; created_at is kept from the first put
// (filled with the current time when empty).
struct JobRecord {
  std::string job_name{}, task_name{}, task_hash{}, language{}, gpu_arch{};
  std::string status = "running";  // running | done | failed | interrupted
  std::string config_json{}, progress_json{}, created_at{}, updated_at{};
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double cost = 0;
  // The process that runs (or last ran) the job, and when it last said it was alive.
  int64_t owner_pid = 0;
  std::string owner_host{}, heartbeat_at{};
};

struct TaskRecord {
  std::string task_hash{}, task_name{}, language{}, files_json{}, blocks_json{}, created_at{};
};

struct KernelRecord {
  std::string uuid{}, parent_uuid{};
  std::string job_name{};  // "" = not part of a job; otherwise the job must be stored first
  std::string task_hash{}, task_name{};
  int trial = 0, branch = 0;
  std::string language{}, gpu_arch{}, model{}, prompt{}, answer{}, code{};
  int verdict = 0;  // 0 no code .. 5 correct (DESIGN.md §6.1)
  std::string reason{};
  std::string runtimes_json{};      // {arch: {benchmark_id: {median_ms,...,samples:[...]}}}
  std::optional<double> speedup{};  // none when not correct or not measured
  // The speedup's confidence interval when it was measured side by side with the reference
  // (eval/paired.h; schema 5). Unset (NULL) for kernels without one. speedup_hi is +inf when the
  // interval is unbounded (fewer than two batch pairs); stored as NULL.
  struct Interval {
    double lo = 0, hi = 0, confidence = 0.95;
    int batches = 0;
  };
  std::optional<Interval> speedup_interval{};
  double fitness = 0;
  std::string eval_log{}, profile_json{}, template_results_json{}, archive_cell{};
  // JSON array of integrity flags; an object with "suspect": true keeps the kernel out of
  // best_kernel(). "" is stored as "[]".
  std::string flags_json{};
  std::string created_at{};  // filled with the current time when empty
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double cost = 0;
  std::string feedback{};       // the feedback LLM's summary of eval_log ("" = none yet)
  int island = 0;               // the archive island the kernel belongs to
  std::string finish_reason{};  // of the LLM answer: "stop", "length", ...
  // The meta-prompt variant (prompt_variants.variant_id) its prompt used; none when
  // meta-prompting was off (schema 7).
  std::optional<int> prompt_variant{};
};

// One paid LLM answer of a job. call_key is "generate:t<trial>:b<branch>" for a branch's answer
// or "feedback:<kernel uuid>" for a summary of that kernel's eval log.
struct LlmCallRecord {
  std::string job_name{}, call_key{};
  std::string purpose = "generate";  // generate | feedback
  int trial = 0, branch = 0;
  std::string parent_uuid{}, server{}, model{};
  std::string system_prompt{}, prompt{}, answer{}, finish_reason{};
  bool truncated = false;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  // Of prompt_tokens: read from / written to the provider's prompt cache; of completion_tokens:
  // spent on reasoning (schema 4).
  int64_t cached_tokens = 0, cache_write_tokens = 0, reasoning_tokens = 0;
  double cost = 0;
  int attempts = 1;
  double latency_s = 0;
  std::string created_at{};  // filled with the current time when empty
};

// A reference timing kept for later jobs of the same key (eval/reference_timing.h; schema 6).
// timing_key is the SHA-256 of key_json; task_hash, language, gpu_arch and device repeat
// fields of it for queries. put_reference_timing() fills created_at when empty.
struct ReferenceTimingRecord {
  std::string timing_key{}, task_hash{}, language{}, gpu_arch{}, device{};
  std::string key_json{}, timings_json{};
  std::string job_name{};  // the job that timed it ("" = none); kept when the job is deleted
  std::string created_at{};
};

// One guidance variant of a job's meta-prompt evolution (search/meta_prompt.h; schema 7).
// Variant 1 is the shipped guidance; parent_id is the best variant when it was written.
struct PromptVariantRecord {
  std::string job_name{};
  int variant_id = 0;
  std::optional<int> parent_id{};
  std::string text{};
  int created_trial = 0;          // the iteration after which it was written (0: shipped)
  std::optional<double> score{};  // mean improvement of its children; none before any
  int uses = 0;                   // children prompted with it
  bool dropped = false;           // pruned (max_prompts): kept for lineage, no longer sampled
  std::string created_at{};       // filled with the current time when empty
};

enum class KernelOrder {
  kNewestFirst,  // by created_at
  kOldestFirst,
  kTrialOrder,  // trial, then branch (replaying a job)
  kBestFirst,   // verdict, then speedup, then fitness
};

// Empty strings and unset optionals match everything. (Members have initializers so that
// designated initializers, {.job_name = "j1"}, compile cleanly.)
struct KernelFilter {
  std::string job_name{}, task_name{}, gpu_arch{}, language{};
  std::optional<int> min_verdict{};
  // Non-empty: only kernels whose parent_uuid is one of these ("" = kernels without a parent).
  std::vector<std::string> parent_uuids{};
  std::optional<int> before_trial{};  // only kernels of an earlier trial (iteration)
  int limit = 0;                      // 0 = no limit
  KernelOrder order = KernelOrder::kNewestFirst;
};

class Store {
 public:
  // Creates the parent directories and the database, turns on WAL, and applies pending
  // migrations. A database from a newer build is refused.
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& path,
                                             int busy_timeout_ms = 5000);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::filesystem::path& path() const { return path_; }
  int schema_version() const { return schema_version_; }

  Status put_job(const JobRecord& job);  // insert or update by job_name
  Result<std::optional<JobRecord>> job(const std::string& job_name);
  Result<std::vector<JobRecord>> jobs();  // oldest first
  // Stamps heartbeat_at with the current time while (owner_pid, owner_host) still own the job;
  // false when another process has taken it over.
  Result<bool> heartbeat_job(const std::string& job_name, int64_t owner_pid,
                             const std::string& owner_host);
  // Removes a job and, through the foreign keys, its kernels and LLM calls.
  Status delete_job(const std::string& job_name);

  Status put_task(const TaskRecord& task);  // insert if absent (by hash)
  Result<std::optional<TaskRecord>> task(const std::string& task_hash);

  Status put_kernel(const KernelRecord& kernel);  // insert or replace by uuid
  Result<std::optional<KernelRecord>> kernel(const std::string& uuid);
  Result<std::vector<KernelRecord>> kernels(const KernelFilter& filter);
  // The best correct kernel (verdict 5, highest speedup, not flagged suspect) for
  // task + arch + language, optionally within one job, or within any of several jobs.
  Result<std::optional<KernelRecord>> best_kernel(const std::string& task_name,
                                                  const std::string& gpu_arch,
                                                  const std::string& language,
                                                  const std::string& job_name = "");
  Result<std::optional<KernelRecord>> best_kernel(const std::string& task_name,
                                                  const std::string& gpu_arch,
                                                  const std::string& language,
                                                  const std::vector<std::string>& job_names);

  Status put_llm_call(const LlmCallRecord& call);  // insert or replace by (job, call_key)
  Result<std::optional<LlmCallRecord>> llm_call(const std::string& job_name,
                                                const std::string& call_key);
  Result<std::vector<LlmCallRecord>> llm_calls(const std::string& job_name);  // oldest first
  // Totals over a job's stored calls (every run of it, resumed ones included).
  struct LlmTotals {
    int64_t calls = 0, prompt_tokens = 0, completion_tokens = 0;
    int64_t cached_tokens = 0, cache_write_tokens = 0, reasoning_tokens = 0;
    double cost = 0;
  };
  Result<LlmTotals> llm_totals(const std::string& job_name);

  // Inserts, or replaces the row with the same (job_name, variant_id).
  Status put_prompt_variant(const PromptVariantRecord& variant);
  // A job's variants, by variant_id.
  Result<std::vector<PromptVariantRecord>> prompt_variants(const std::string& job_name);

  // Inserts, or replaces the row with the same timing_key.
  Status put_reference_timing(const ReferenceTimingRecord& timing);
  // The kept timings of a task, newest first.
  Result<std::vector<ReferenceTimingRecord>> reference_timings(const std::string& task_hash);

  // Runs `body` in BEGIN IMMEDIATE .. COMMIT; rolls back when it returns an error (or throws).
  // Nests through savepoints. Other threads using this Store wait until it ends.
  Status transaction(const std::function<Status()>& body);

 private:
  Store(sqlite3* db, std::filesystem::path path) : db_(db), path_(std::move(path)) {}
  Status exec(const std::string& sql, const std::string& what);

  sqlite3* db_;
  std::filesystem::path path_;
  int schema_version_ = 0;
  std::recursive_mutex mutex_;  // one connection: statements and transactions must not interleave
  int transaction_depth_ = 0;
};

// A random (version 4) UUID, e.g. "3f2b8c1e-9a4d-4e6f-8b1a-0c2d3e4f5a6b".
std::string new_uuid();
// The current UTC time, e.g. "2025-01-31T12:34:56.789Z" (sorts as text).
std::string now_iso8601();

}  // namespace kf
