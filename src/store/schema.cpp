// The SQL of every schema version (DESIGN.md §11). Append a migration; never edit a shipped one.
#include "store/schema.h"

namespace kf {

namespace {

// Version 1: meta, jobs, tasks, kernels.
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
);

CREATE TABLE jobs (
  job_name          TEXT PRIMARY KEY,
  task_name         TEXT NOT NULL DEFAULT '',
  task_hash         TEXT NOT NULL DEFAULT '',
  language          TEXT NOT NULL DEFAULT '',
  gpu_arch          TEXT NOT NULL DEFAULT '',
  status            TEXT NOT NULL DEFAULT 'running',
  config_json       TEXT NOT NULL DEFAULT '',
  progress_json     TEXT NOT NULL DEFAULT '',
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost              REAL NOT NULL DEFAULT 0,
  created_at        TEXT NOT NULL,
  updated_at        TEXT NOT NULL
);

CREATE TABLE tasks (
  task_hash   TEXT PRIMARY KEY,
  task_name   TEXT NOT NULL DEFAULT '',
  language    TEXT NOT NULL DEFAULT '',
  files_json  TEXT NOT NULL DEFAULT '',
  blocks_json TEXT NOT NULL DEFAULT '',
  created_at  TEXT NOT NULL
);

CREATE TABLE kernels (
  uuid                  TEXT PRIMARY KEY,
  parent_uuid           TEXT NOT NULL DEFAULT '',
  -- NULL when the kernel belongs to no job; deleting a job deletes its kernels.
  job_name              TEXT REFERENCES jobs(job_name) ON DELETE CASCADE,
  task_hash             TEXT NOT NULL DEFAULT '',
  task_name             TEXT NOT NULL DEFAULT '',
  trial                 INTEGER NOT NULL DEFAULT 0,
  branch                INTEGER NOT NULL DEFAULT 0,
  language              TEXT NOT NULL DEFAULT '',
  gpu_arch              TEXT NOT NULL DEFAULT '',
  model                 TEXT NOT NULL DEFAULT '',
  prompt                TEXT NOT NULL DEFAULT '',
  answer                TEXT NOT NULL DEFAULT '',
  code                  TEXT NOT NULL DEFAULT '',
  verdict               INTEGER NOT NULL DEFAULT 0,
  reason                TEXT NOT NULL DEFAULT '',
  runtimes_json         TEXT NOT NULL DEFAULT '',
  speedup               REAL,
  fitness               REAL NOT NULL DEFAULT 0,
  eval_log              TEXT NOT NULL DEFAULT '',
  profile_json          TEXT NOT NULL DEFAULT '',
  template_results_json TEXT NOT NULL DEFAULT '',
  archive_cell          TEXT NOT NULL DEFAULT '',
  flags_json            TEXT NOT NULL DEFAULT '[]',
  -- Derived from flags_json on write, so that best-kernel queries need no JSON parsing.
  suspect               INTEGER NOT NULL DEFAULT 0,
  prompt_tokens         INTEGER NOT NULL DEFAULT 0,
  completion_tokens     INTEGER NOT NULL DEFAULT 0,
  cost                  REAL NOT NULL DEFAULT 0,
  created_at            TEXT NOT NULL
);

CREATE INDEX kernels_by_task ON kernels(task_name, gpu_arch, language, verdict);
CREATE INDEX kernels_by_job ON kernels(job_name);
CREATE INDEX kernels_by_parent ON kernels(parent_uuid);
)sql";

// Version 2: the optimisation loop. Every paid LLM answer is kept in llm_calls (keyed per job,
// so a resumed job never pays for one twice); kernels gain the feedback LLM's summary of their
// eval log, their archive island and the answer's finish reason.
constexpr const char* kSchemaV2 = R"sql(
ALTER TABLE kernels ADD COLUMN feedback TEXT NOT NULL DEFAULT '';
ALTER TABLE kernels ADD COLUMN island INTEGER NOT NULL DEFAULT 0;
ALTER TABLE kernels ADD COLUMN finish_reason TEXT NOT NULL DEFAULT '';

CREATE TABLE llm_calls (
  job_name          TEXT NOT NULL REFERENCES jobs(job_name) ON DELETE CASCADE,
  -- "generate:t<trial>:b<branch>" or "feedback:<kernel uuid>"
  call_key          TEXT NOT NULL,
  purpose           TEXT NOT NULL DEFAULT 'generate',
  trial             INTEGER NOT NULL DEFAULT 0,
  branch            INTEGER NOT NULL DEFAULT 0,
  parent_uuid       TEXT NOT NULL DEFAULT '',
  server            TEXT NOT NULL DEFAULT '',
  model             TEXT NOT NULL DEFAULT '',
  system_prompt     TEXT NOT NULL DEFAULT '',
  prompt            TEXT NOT NULL DEFAULT '',
  answer            TEXT NOT NULL DEFAULT '',
  finish_reason     TEXT NOT NULL DEFAULT '',
  truncated         INTEGER NOT NULL DEFAULT 0,
  prompt_tokens     INTEGER NOT NULL DEFAULT 0,
  completion_tokens INTEGER NOT NULL DEFAULT 0,
  cost              REAL NOT NULL DEFAULT 0,
  attempts          INTEGER NOT NULL DEFAULT 1,
  latency_s         REAL NOT NULL DEFAULT 0,
  created_at        TEXT NOT NULL,
  PRIMARY KEY (job_name, call_key)
);
)sql";

// Version 3: who runs a job. A running job names its process (pid, host) and refreshes a
// heartbeat, so a job whose process died reads as interrupted and a second process cannot
// resume a job that is still alive elsewhere.
constexpr const char* kSchemaV3 = R"sql(
ALTER TABLE jobs ADD COLUMN owner_pid INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN owner_host TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN heartbeat_at TEXT NOT NULL DEFAULT '';
)sql";

// Version 4: current provider APIs (issue 13). Per call, the input tokens read from and written
// to the provider's prompt cache, and the completion tokens spent on reasoning / thinking.
constexpr const char* kSchemaV4 = R"sql(
ALTER TABLE llm_calls ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE llm_calls ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE llm_calls ADD COLUMN reasoning_tokens INTEGER NOT NULL DEFAULT 0;
)sql";

// Version 5: side-by-side speedups (issue 9). A kernel timed in batches alternating with the
// reference keeps its speedup's confidence interval: the bounds, the confidence level and the
// number of batch pairs. NULL for kernels measured before (and without) it; speedup_hi NULL with
// speedup_lo set is an unbounded interval (fewer than two pairs).
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE kernels ADD COLUMN speedup_lo REAL;
ALTER TABLE kernels ADD COLUMN speedup_hi REAL;
ALTER TABLE kernels ADD COLUMN speedup_confidence REAL;
ALTER TABLE kernels ADD COLUMN speedup_batches INTEGER;
)sql";

// Version 6: reference timings kept across jobs (issue 9). One row per timing key: the SHA-256 of
// key_json, which holds everything the timing depends on (task, language, arch, device, timer,
// harness, the reference binary's build, the timing settings). Not tied to a job by a foreign
// key: the timing stays valid when the job that made it is deleted.
constexpr const char* kSchemaV6 = R"sql(
CREATE TABLE reference_timings (
  timing_key   TEXT PRIMARY KEY,
  task_hash    TEXT NOT NULL,
  language     TEXT NOT NULL DEFAULT '',
  gpu_arch     TEXT NOT NULL DEFAULT '',
  device       TEXT NOT NULL DEFAULT '',
  key_json     TEXT NOT NULL,
  -- {shape: {median_ms, mean_ms, min_ms, std_ms, n, samples_ms}}
  timings_json TEXT NOT NULL,
  job_name     TEXT NOT NULL DEFAULT '',
  created_at   TEXT NOT NULL
);

CREATE INDEX reference_timings_by_task ON reference_timings(task_hash);
)sql";

// Version 7: meta-prompt evolution (issue 10). The guidance variants of a job (the shipped one is
// variant 1; the others an LLM wrote from earlier outcomes), with their lineage and their score
// when last computed; and per kernel, the variant its prompt used (NULL: meta-prompting was off).
constexpr const char* kSchemaV7 = R"sql(
CREATE TABLE prompt_variants (
  job_name      TEXT NOT NULL REFERENCES jobs(job_name) ON DELETE CASCADE,
  variant_id    INTEGER NOT NULL,
  parent_id     INTEGER,
  text          TEXT NOT NULL,
  created_trial INTEGER NOT NULL DEFAULT 0,
  score         REAL,
  uses          INTEGER NOT NULL DEFAULT 0,
  dropped       INTEGER NOT NULL DEFAULT 0,
  created_at    TEXT NOT NULL,
  PRIMARY KEY (job_name, variant_id)
);

ALTER TABLE kernels ADD COLUMN prompt_variant INTEGER;
)sql";

}  // namespace

const std::vector<Migration>& schema_migrations() {
  static const std::vector<Migration> kMigrations = {
      {1, kSchemaV1}, {2, kSchemaV2}, {3, kSchemaV3}, {4, kSchemaV4},
      {5, kSchemaV5}, {6, kSchemaV6}, {7, kSchemaV7},
  };
  return kMigrations;
}

int latest_schema_version() {
  return schema_migrations().back().version;
}

}  // namespace kf
