// Store: the jobs and tasks tables.
#include <sqlite3.h>

#include <array>

#include "store/statement.h"
#include "store/store.h"

namespace kf {

namespace {

constexpr std::array<const char*, 4> kJobStatuses = {"running", "done", "failed", "interrupted"};

constexpr const char* kJobColumns =
    "job_name, task_name, task_hash, language, gpu_arch, status, config_json, progress_json, "
    "prompt_tokens, completion_tokens, cost, created_at, updated_at, owner_pid, owner_host, "
    "heartbeat_at";

JobRecord read_job(const Statement& s) {
  JobRecord job;
  job.job_name = s.text(0);
  job.task_name = s.text(1);
  job.task_hash = s.text(2);
  job.language = s.text(3);
  job.gpu_arch = s.text(4);
  job.status = s.text(5);
  job.config_json = s.text(6);
  job.progress_json = s.text(7);
  job.prompt_tokens = s.int64(8);
  job.completion_tokens = s.int64(9);
  job.cost = s.real(10);
  job.created_at = s.text(11);
  job.updated_at = s.text(12);
  job.owner_pid = s.int64(13);
  job.owner_host = s.text(14);
  job.heartbeat_at = s.text(15);
  return job;
}

Result<std::vector<JobRecord>> query_jobs(Statement& s, const std::string& what) {
  std::vector<JobRecord> jobs;
  while (true) {
    Result<bool> row = s.step(what);
    if (!row) return row.status();
    if (!*row) return jobs;
    jobs.push_back(read_job(s));
  }
}

}  // namespace

Status Store::put_job(const JobRecord& job) {
  if (job.job_name.empty()) return Status::error("cannot save a job without a job_name");
  bool known = false;
  for (const char* status : kJobStatuses) known = known || job.status == status;
  if (!known)
    return Status::error("cannot save job '" + job.job_name + "': unknown status '" + job.status +
                         "' (expected running, done, failed or interrupted)");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      std::string("INSERT INTO jobs (") + kJobColumns +
          ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16) "
          "ON CONFLICT(job_name) DO UPDATE SET task_name = excluded.task_name, "
          "task_hash = excluded.task_hash, language = excluded.language, "
          "gpu_arch = excluded.gpu_arch, status = excluded.status, "
          "config_json = excluded.config_json, progress_json = excluded.progress_json, "
          "prompt_tokens = excluded.prompt_tokens, completion_tokens = excluded.completion_tokens, "
          "cost = excluded.cost, updated_at = excluded.updated_at, owner_pid = excluded.owner_pid, "
          "owner_host = excluded.owner_host, heartbeat_at = excluded.heartbeat_at");
  if (!s) return s.status();
  std::string now = now_iso8601();
  s->bind_text(1, job.job_name)
      .bind_text(2, job.task_name)
      .bind_text(3, job.task_hash)
      .bind_text(4, job.language)
      .bind_text(5, job.gpu_arch)
      .bind_text(6, job.status)
      .bind_text(7, job.config_json)
      .bind_text(8, job.progress_json)
      .bind_int(9, job.prompt_tokens)
      .bind_int(10, job.completion_tokens)
      .bind_double(11, job.cost)
      .bind_text(12, job.created_at.empty() ? now : job.created_at)
      .bind_text(13, now)
      .bind_int(14, job.owner_pid)
      .bind_text(15, job.owner_host)
      .bind_text(16, job.heartbeat_at);
  return s->run("cannot save job '" + job.job_name + "'");
}

Result<bool> Store::heartbeat_job(const std::string& job_name, int64_t owner_pid,
                                  const std::string& owner_host) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      "UPDATE jobs SET heartbeat_at = ?1 WHERE job_name = ?2 AND owner_pid = ?3 AND "
      "owner_host = ?4");
  if (!s) return s.status();
  s->bind_text(1, now_iso8601())
      .bind_text(2, job_name)
      .bind_int(3, owner_pid)
      .bind_text(4, owner_host);
  KF_RETURN_IF_ERROR(s->run("cannot record the heartbeat of job '" + job_name + "'"));
  return sqlite3_changes(db_) > 0;
}

Status Store::delete_job(const std::string& job_name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s =
      Statement::prepare(db_, path_.string(), "DELETE FROM jobs WHERE job_name = ?1");
  if (!s) return s.status();
  s->bind_text(1, job_name);
  return s->run("cannot delete job '" + job_name + "'");
}

Result<std::optional<JobRecord>> Store::job(const std::string& job_name) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(), std::string("SELECT ") + kJobColumns + " FROM jobs WHERE job_name = ?1");
  if (!s) return s.status();
  s->bind_text(1, job_name);
  Result<std::vector<JobRecord>> found = query_jobs(*s, "cannot read job '" + job_name + "'");
  if (!found) return found.status();
  if (found->empty()) return std::optional<JobRecord>();
  return std::optional<JobRecord>(std::move(found->front()));
}

Result<std::vector<JobRecord>> Store::jobs() {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      std::string("SELECT ") + kJobColumns + " FROM jobs ORDER BY created_at, job_name");
  if (!s) return s.status();
  return query_jobs(*s, "cannot list jobs");
}

Status Store::put_task(const TaskRecord& task) {
  if (task.task_hash.empty()) return Status::error("cannot save a task without a task_hash");
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      "INSERT INTO tasks (task_hash, task_name, language, files_json, blocks_json, created_at) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(task_hash) DO NOTHING");
  if (!s) return s.status();
  s->bind_text(1, task.task_hash)
      .bind_text(2, task.task_name)
      .bind_text(3, task.language)
      .bind_text(4, task.files_json)
      .bind_text(5, task.blocks_json)
      .bind_text(6, task.created_at.empty() ? now_iso8601() : task.created_at);
  return s->run("cannot save task '" + task.task_name + "'");
}

Result<std::optional<TaskRecord>> Store::task(const std::string& task_hash) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  Result<Statement> s = Statement::prepare(
      db_, path_.string(),
      "SELECT task_hash, task_name, language, files_json, blocks_json, created_at "
      "FROM tasks WHERE task_hash = ?1");
  if (!s) return s.status();
  s->bind_text(1, task_hash);
  Result<bool> row = s->step("cannot read task " + task_hash);
  if (!row) return row.status();
  if (!*row) return std::optional<TaskRecord>();
  TaskRecord task{s->text(0), s->text(1), s->text(2), s->text(3), s->text(4), s->text(5)};
  return std::optional<TaskRecord>(std::move(task));
}

}  // namespace kf
