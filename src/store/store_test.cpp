// Tests for the kernel database: schema and migrations, record round trips, filters, the best
// kernel, concurrent writers and transactions.
#include "store/store.h"

#include <sqlite3.h>

#include <limits>
#include <regex>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "store/schema.h"
#include "util/fs.h"
#include "util/secrets.h"

namespace kf {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_store_test_");
    ASSERT_TRUE(dir.is_ok()) << dir.message();
    dir_ = *dir;
    db_path_ = dir_ / "nested" / "dir" / "kernels.db";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<Store> open_store() {
    auto store = Store::open(db_path_);
    EXPECT_TRUE(store.is_ok()) << store.message();
    return store.is_ok() ? std::move(store.value()) : nullptr;
  }

  // Runs SQL on the file through a separate raw connection; returns the first column of the first
  // row.
  std::string raw_sql(const std::string& sql) {
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(db_path_.c_str(), &db), SQLITE_OK);
    std::string first;
    sqlite3_exec(
        db, sql.c_str(),
        [](void* out, int n, char** values, char**) {
          auto* s = static_cast<std::string*>(out);
          if (s->empty() && n > 0 && values[0] != nullptr) *s = values[0];
          return 0;
        },
        &first, nullptr);
    sqlite3_close(db);
    return first;
  }

  static JobRecord job_named(const std::string& name) {
    JobRecord job;
    job.job_name = name;
    job.task_name = "softmax";
    return job;
  }

  static KernelRecord kernel(const std::string& job, int verdict, std::optional<double> speedup,
                             const std::string& task = "softmax", const std::string& arch = "h200",
                             const std::string& language = "cuda") {
    KernelRecord k;
    k.uuid = new_uuid();
    k.job_name = job;
    k.task_name = task;
    k.gpu_arch = arch;
    k.language = language;
    k.verdict = verdict;
    k.speedup = speedup;
    k.fitness = verdict + speedup.value_or(0);
    return k;
  }

  fs::path dir_;
  fs::path db_path_;
};

TEST_F(StoreTest, OpenCreatesDirectoriesSchemaAndWal) {
  auto store = open_store();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), latest_schema_version());
  EXPECT_TRUE(fs::exists(db_path_));
  EXPECT_EQ(raw_sql("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw_sql("SELECT value FROM meta WHERE key = 'schema_version'"),
            std::to_string(latest_schema_version()));
  for (const char* table : {"jobs", "tasks", "kernels", "meta"})
    EXPECT_EQ(raw_sql(std::string("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                                  "name = '") +
                      table + "'"),
              "1")
        << table;
  EXPECT_EQ(raw_sql("SELECT group_concat(name) FROM (SELECT name FROM sqlite_master WHERE "
                    "type = 'index' AND tbl_name = 'kernels' AND name LIKE 'kernels_by_%' "
                    "ORDER BY name)"),
            "kernels_by_job,kernels_by_parent,kernels_by_task");
}

TEST_F(StoreTest, ReopenKeepsDataAndDoesNotMigrateAgain) {
  {
    auto store = open_store();
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->put_job(job_named("j1")).is_ok());
  }
  auto store = open_store();
  ASSERT_TRUE(store);
  auto job = store->job("j1");
  ASSERT_TRUE(job.is_ok()) << job.message();
  ASSERT_TRUE(job->has_value());
  EXPECT_EQ((*job)->task_name, "softmax");
  EXPECT_EQ(store->schema_version(), latest_schema_version());
}

TEST_F(StoreTest, JobRoundTripsAndUpdatesByName) {
  auto store = open_store();
  ASSERT_TRUE(store);
  JobRecord job{"j1",
                "softmax",
                "abc123",
                "cuda",
                "h200",
                "running",
                R"({"max_iters":3})",
                R"({"iter":1})",
                "2024-01-02T03:04:05.000Z",
                "",
                100,
                50,
                0.25};
  ASSERT_TRUE(store->put_job(job).is_ok());
  auto got = store->job("j1");
  ASSERT_TRUE(got.is_ok()) << got.message();
  ASSERT_TRUE(got->has_value());
  const JobRecord& j = **got;
  EXPECT_EQ(j.job_name, "j1");
  EXPECT_EQ(j.task_name, "softmax");
  EXPECT_EQ(j.task_hash, "abc123");
  EXPECT_EQ(j.language, "cuda");
  EXPECT_EQ(j.gpu_arch, "h200");
  EXPECT_EQ(j.status, "running");
  EXPECT_EQ(j.config_json, R"({"max_iters":3})");
  EXPECT_EQ(j.progress_json, R"({"iter":1})");
  EXPECT_EQ(j.created_at, "2024-01-02T03:04:05.000Z");
  EXPECT_FALSE(j.updated_at.empty());
  EXPECT_GT(j.updated_at, j.created_at);
  EXPECT_EQ(j.prompt_tokens, 100);
  EXPECT_EQ(j.completion_tokens, 50);
  EXPECT_DOUBLE_EQ(j.cost, 0.25);

  job.status = "done";
  job.progress_json = R"({"iter":3})";
  job.created_at = "";  // the first creation time stays
  ASSERT_TRUE(store->put_job(job).is_ok());
  got = store->job("j1");
  EXPECT_EQ((*got)->status, "done");
  EXPECT_EQ((*got)->progress_json, R"({"iter":3})");
  EXPECT_EQ((*got)->created_at, "2024-01-02T03:04:05.000Z");

  ASSERT_TRUE(store->put_job(job_named("j2")).is_ok());
  auto all = store->jobs();
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].job_name, "j1");
  EXPECT_EQ((*all)[1].job_name, "j2");

  EXPECT_FALSE(store->job("missing")->has_value());
  job.status = "finished";
  Status bad = store->put_job(job);
  EXPECT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("unknown status 'finished'"), std::string::npos) << bad.message();
  EXPECT_FALSE(store->put_job(JobRecord{}).is_ok());
}

TEST_F(StoreTest, TaskRoundTripsAndIsInsertedOnlyOnce) {
  auto store = open_store();
  ASSERT_TRUE(store);
  TaskRecord task{"hash1",         "softmax",
                  "cuda",          R"({"kernel.cu":"..."})",
                  R"(["EVOLVE"])", "2024-01-01T00:00:00.000Z"};
  ASSERT_TRUE(store->put_task(task).is_ok());
  TaskRecord again = task;
  again.task_name = "renamed";
  ASSERT_TRUE(store->put_task(again).is_ok());  // same hash: already there, untouched
  auto got = store->task("hash1");
  ASSERT_TRUE(got.is_ok()) << got.message();
  ASSERT_TRUE(got->has_value());
  EXPECT_EQ((*got)->task_hash, "hash1");
  EXPECT_EQ((*got)->task_name, "softmax");
  EXPECT_EQ((*got)->language, "cuda");
  EXPECT_EQ((*got)->files_json, task.files_json);
  EXPECT_EQ((*got)->blocks_json, task.blocks_json);
  EXPECT_EQ((*got)->created_at, task.created_at);
  EXPECT_FALSE(store->task("nope")->has_value());
}

TEST_F(StoreTest, KernelRoundTripsEveryField) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->put_job(job_named("j1")).is_ok());
  KernelRecord k;
  k.uuid = new_uuid();
  k.parent_uuid = new_uuid();
  k.job_name = "j1";
  k.task_hash = "hash1";
  k.task_name = "softmax";
  k.trial = 3;
  k.branch = 2;
  k.language = "cuda";
  k.gpu_arch = "h200";
  k.model = "gpt-x";
  k.prompt = "make it fast";
  k.answer = "```cuda\n...\n```";
  k.code = "__global__ void k() {}";
  k.verdict = 5;
  k.reason = "correct";
  k.runtimes_json = R"({"h200":{"b0":{"median_ms":1.5}}})";
  k.speedup = 1.75;
  k.fitness = 6.75;
  k.eval_log = "build ok\n";
  k.profile_json = R"({"dram":0.8})";
  k.template_results_json = R"([{"A":16}])";
  k.archive_cell = "2,1,0";
  k.flags_json = R"([{"kind":"roofline","suspect":false}])";
  k.created_at = "2024-05-06T07:08:09.123Z";
  k.prompt_tokens = 1000;
  k.completion_tokens = 200;
  k.cost = 0.0125;
  ASSERT_TRUE(store->put_kernel(k).is_ok());

  auto got = store->kernel(k.uuid);
  ASSERT_TRUE(got.is_ok()) << got.message();
  ASSERT_TRUE(got->has_value());
  const KernelRecord& g = **got;
  EXPECT_EQ(g.uuid, k.uuid);
  EXPECT_EQ(g.parent_uuid, k.parent_uuid);
  EXPECT_EQ(g.job_name, k.job_name);
  EXPECT_EQ(g.task_hash, k.task_hash);
  EXPECT_EQ(g.task_name, k.task_name);
  EXPECT_EQ(g.trial, 3);
  EXPECT_EQ(g.branch, 2);
  EXPECT_EQ(g.language, k.language);
  EXPECT_EQ(g.gpu_arch, k.gpu_arch);
  EXPECT_EQ(g.model, k.model);
  EXPECT_EQ(g.prompt, k.prompt);
  EXPECT_EQ(g.answer, k.answer);
  EXPECT_EQ(g.code, k.code);
  EXPECT_EQ(g.verdict, 5);
  EXPECT_EQ(g.reason, k.reason);
  EXPECT_EQ(g.runtimes_json, k.runtimes_json);
  ASSERT_TRUE(g.speedup.has_value());
  EXPECT_DOUBLE_EQ(*g.speedup, 1.75);
  EXPECT_DOUBLE_EQ(g.fitness, 6.75);
  EXPECT_EQ(g.eval_log, k.eval_log);
  EXPECT_EQ(g.profile_json, k.profile_json);
  EXPECT_EQ(g.template_results_json, k.template_results_json);
  EXPECT_EQ(g.archive_cell, k.archive_cell);
  EXPECT_EQ(g.flags_json, k.flags_json);
  EXPECT_EQ(g.created_at, k.created_at);
  EXPECT_EQ(g.prompt_tokens, 1000);
  EXPECT_EQ(g.completion_tokens, 200);
  EXPECT_DOUBLE_EQ(g.cost, 0.0125);

  // Replaced by uuid: a failed re-evaluation has no speedup.
  k.verdict = 2;
  k.speedup.reset();
  k.job_name = "";  // no job: stored as NULL, read back as ""
  ASSERT_TRUE(store->put_kernel(k).is_ok());
  got = store->kernel(k.uuid);
  EXPECT_EQ((*got)->verdict, 2);
  EXPECT_FALSE((*got)->speedup.has_value());
  EXPECT_EQ((*got)->job_name, "");
  EXPECT_EQ(store->kernels({})->size(), 1u);
  EXPECT_FALSE(store->kernel("no-such-uuid")->has_value());
}

TEST_F(StoreTest, KernelOfUnknownJobIsRefusedWithAHint) {
  auto store = open_store();
  ASSERT_TRUE(store);
  Status s = store->put_kernel(kernel("ghost", 5, 1.0));
  EXPECT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("put_job first"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find(db_path_.string()), std::string::npos) << s.message();
  KernelRecord no_uuid;
  EXPECT_FALSE(store->put_kernel(no_uuid).is_ok());
  KernelRecord bad_flags = kernel("", 5, 1.0);
  bad_flags.flags_json = R"({"suspect":true})";
  Status flags = store->put_kernel(bad_flags);
  EXPECT_FALSE(flags.is_ok());
  EXPECT_NE(flags.message().find("flags_json must be a JSON array"), std::string::npos);
}

TEST_F(StoreTest, FiltersAndOrders) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->put_job(job_named("j1")).is_ok());
  ASSERT_TRUE(store->put_job(job_named("j2")).is_ok());
  std::vector<KernelRecord> put = {
      kernel("j1", 5, 1.2),                                     // 0
      kernel("j1", 1, std::nullopt),                            // 1
      kernel("j1", 4, std::nullopt, "gemm"),                    // 2
      kernel("j2", 5, 2.0, "softmax", "ampere"),                // 3
      kernel("j2", 3, std::nullopt, "softmax", "h200", "ocl"),  // 4
  };
  for (size_t i = 0; i < put.size(); ++i) {
    put[i].trial = static_cast<int>(put.size() - i);  // trial order is the reverse of insertion
    ASSERT_TRUE(store->put_kernel(put[i]).is_ok());
  }
  auto uuids = [&](const KernelFilter& f) {
    std::vector<std::string> out;
    auto found = store->kernels(f);
    EXPECT_TRUE(found.is_ok()) << found.message();
    for (const KernelRecord& k : *found) out.push_back(k.uuid);
    return out;
  };
  auto expect = [&](std::initializer_list<int> idx) {
    std::vector<std::string> out;
    for (int i : idx) out.push_back(put[i].uuid);
    return out;
  };
  EXPECT_EQ(uuids({}), expect({4, 3, 2, 1, 0}));  // newest first
  EXPECT_EQ(uuids({.job_name = "j1"}), expect({2, 1, 0}));
  EXPECT_EQ(uuids({.task_name = "gemm"}), expect({2}));
  EXPECT_EQ(uuids({.gpu_arch = "ampere"}), expect({3}));
  EXPECT_EQ(uuids({.language = "ocl"}), expect({4}));
  EXPECT_EQ(uuids({.min_verdict = 4}), expect({3, 2, 0}));
  EXPECT_EQ(uuids({.job_name = "j1", .task_name = "softmax", .min_verdict = 5}), expect({0}));
  EXPECT_EQ(uuids({.limit = 2}), expect({4, 3}));
  EXPECT_EQ(uuids({.order = KernelOrder::kOldestFirst}), expect({0, 1, 2, 3, 4}));
  EXPECT_EQ(uuids({.order = KernelOrder::kTrialOrder}), expect({4, 3, 2, 1, 0}));
  EXPECT_EQ(uuids({.order = KernelOrder::kBestFirst}), expect({3, 0, 2, 4, 1}));
  EXPECT_TRUE(uuids({.job_name = "nope"}).empty());
}

TEST_F(StoreTest, BestKernelIsTheFastestCorrectUnflaggedOne) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->put_job(job_named("j1")).is_ok());
  ASSERT_TRUE(store->put_job(job_named("j2")).is_ok());
  KernelRecord slow = kernel("j1", 5, 1.5);
  KernelRecord best = kernel("j1", 5, 2.0);
  KernelRecord suspect = kernel("j1", 5, 9.0);
  suspect.flags_json = R"([{"kind":"roofline","suspect":true}])";
  KernelRecord harmless_flag = kernel("j2", 5, 1.8);
  harmless_flag.flags_json = R"([{"kind":"note","suspect":false}, "plain text flag"])";
  KernelRecord wrong = kernel("j1", 4, 50.0);
  KernelRecord other_arch = kernel("j1", 5, 5.0, "softmax", "ampere");
  KernelRecord other_language = kernel("j1", 5, 6.0, "softmax", "h200", "ocl");
  KernelRecord other_task = kernel("j1", 5, 7.0, "gemm");
  for (const KernelRecord* k :
       {&slow, &best, &suspect, &harmless_flag, &wrong, &other_arch, &other_language, &other_task})
    ASSERT_TRUE(store->put_kernel(*k).is_ok());

  auto found = store->best_kernel("softmax", "h200", "cuda");
  ASSERT_TRUE(found.is_ok()) << found.message();
  ASSERT_TRUE(found->has_value());
  EXPECT_EQ((*found)->uuid, best.uuid);
  EXPECT_EQ((*store->best_kernel("softmax", "ampere", "cuda"))->uuid, other_arch.uuid);
  EXPECT_EQ((*store->best_kernel("softmax", "h200", "ocl"))->uuid, other_language.uuid);
  EXPECT_EQ((*store->best_kernel("gemm", "h200", "cuda"))->uuid, other_task.uuid);
  EXPECT_EQ((*store->best_kernel("softmax", "h200", "cuda", "j2"))->uuid, harmless_flag.uuid);
  EXPECT_FALSE(store->best_kernel("softmax", "lnl", "cuda")->has_value());
  // Within any of several jobs (`kernels_iter_0_path: best-j1/j2`).
  using Jobs = std::vector<std::string>;
  EXPECT_EQ((*store->best_kernel("softmax", "h200", "cuda", Jobs{"j2", "j1"}))->uuid, best.uuid);
  EXPECT_EQ((*store->best_kernel("softmax", "h200", "cuda", Jobs{"j2", "none"}))->uuid,
            harmless_flag.uuid);
  EXPECT_FALSE(store->best_kernel("softmax", "h200", "cuda", Jobs{"none"})->has_value());

  // Flagging the best afterwards (re-put by uuid) takes it out.
  best.flags_json = R"([{"kind":"timing","suspect":true}])";
  ASSERT_TRUE(store->put_kernel(best).is_ok());
  EXPECT_EQ((*store->best_kernel("softmax", "h200", "cuda"))->uuid, harmless_flag.uuid);
}

TEST_F(StoreTest, NewerSchemaIsRefused) {
  { ASSERT_TRUE(open_store()); }
  raw_sql("UPDATE meta SET value = '99' WHERE key = 'schema_version'");
  auto store = Store::open(db_path_);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.message(), "kernel database " + db_path_.string() +
                                 " was written by a newer KernelFoundry (schema 99, this build "
                                 "knows " +
                                 std::to_string(latest_schema_version()) +
                                 "); upgrade or use another kernels_db_path");
}

TEST_F(StoreTest, NonDatabaseFileGivesErrorWithPath) {
  ASSERT_TRUE(write_file(db_path_, std::string(4096, 'x')).is_ok());
  auto store = Store::open(db_path_);
  ASSERT_FALSE(store.is_ok());
  EXPECT_NE(store.message().find(db_path_.string()), std::string::npos) << store.message();
  EXPECT_NE(store.message().find("not a database"), std::string::npos) << store.message();
}

TEST_F(StoreTest, NonDatabaseFileNamesTheCauseAndTheFix) {
  ASSERT_TRUE(write_file(db_path_, std::string(4096, 'x')).is_ok());
  auto store = Store::open(db_path_);
  ASSERT_FALSE(store.is_ok());
  EXPECT_NE(store.message().find("not an SQLite database"), std::string::npos) << store.message();
  EXPECT_NE(store.message().find("paths.kernels_db_path"), std::string::npos) << store.message();
}

TEST_F(StoreTest, EmptyFileIsRefusedAndLeftAsItIs) {
  ASSERT_TRUE(write_file(db_path_, "").is_ok());
  auto store = Store::open(db_path_);
  ASSERT_FALSE(store.is_ok());
  EXPECT_EQ(store.message(),
            "kernel database " + db_path_.string() +
                " exists but is empty (0 bytes): it is not a database, perhaps a truncated copy "
                "or a write that failed. Restore it from a backup, or delete it to start a new "
                "database (paths.kernels_db_path)");
  EXPECT_EQ(fs::file_size(db_path_), 0u);
}

TEST_F(StoreTest, LockHeldTooLongNamesTheTimeoutKey) {
  auto store = open_store();
  ASSERT_TRUE(store);
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(db_path_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto waiting = Store::open(db_path_, 50);
  Status put = waiting.is_ok() ? (*waiting)->put_job(job_named("j-locked")) : waiting.status();
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  ASSERT_FALSE(put.is_ok());
  EXPECT_NE(put.message().find(db_path_.string()), std::string::npos) << put.message();
  EXPECT_NE(put.message().find("database is locked"), std::string::npos) << put.message();
  EXPECT_NE(put.message().find("database.busy_timeout_ms"), std::string::npos) << put.message();
}

TEST_F(StoreTest, ConcurrentWritersOnOneFileDoNotFail) {
  // Both open the fresh file at once: they race for WAL mode and the migrations too.
  constexpr int kPerWriter = 150;
  std::vector<std::string> errors[2];
  auto writer = [&](int id) {
    auto store = Store::open(db_path_, 10000);
    if (!store) {
      errors[id].push_back(store.message());
      return;
    }
    std::string job = "job" + std::to_string(id);
    Status s = (*store)->put_job(job_named(job));
    if (!s) errors[id].push_back(s.message());
    for (int i = 0; i < kPerWriter; ++i) {
      KernelRecord k = kernel(job, 5, 1.0 + i);
      if (i % 3 == 0) {
        s = (*store)->transaction([&] {
          KF_RETURN_IF_ERROR((*store)->put_kernel(k));
          JobRecord progress = job_named(job);
          progress.progress_json = "{\"done\":" + std::to_string(i) + "}";
          return (*store)->put_job(progress);
        });
      } else {
        s = (*store)->put_kernel(k);
      }
      if (!s) errors[id].push_back(s.message());
      auto read = (*store)->kernels({.job_name = job, .limit = 1});
      if (!read) errors[id].push_back(read.message());
    }
  };
  std::thread a(writer, 0), b(writer, 1);
  a.join();
  b.join();
  for (const auto& list : errors) EXPECT_TRUE(list.empty()) << list.front();
  auto store = open_store();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->kernels({})->size(), 2u * kPerWriter);
}

TEST_F(StoreTest, OneStoreIsSafeAcrossThreads) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->put_job(job_named("j")).is_ok());
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i)
        if (!store->put_kernel(kernel("j", 5, 1.0))) ++failures;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(store->kernels({})->size(), 200u);
}

TEST_F(StoreTest, TransactionRollsBackOnError) {
  auto store = open_store();
  ASSERT_TRUE(store);
  Status s = store->transaction([&] {
    KF_RETURN_IF_ERROR(store->put_job(job_named("j1")));
    KF_RETURN_IF_ERROR(store->put_kernel(kernel("j1", 5, 2.0)));
    return Status::error("evaluation crashed");
  });
  EXPECT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "evaluation crashed");
  EXPECT_FALSE(store->job("j1")->has_value());
  EXPECT_TRUE(store->kernels({})->empty());

  // A committed one stays; a failed nested one is undone without undoing its parent.
  s = store->transaction([&] {
    KF_RETURN_IF_ERROR(store->put_job(job_named("j1")));
    Status inner = store->transaction([&] {
      KF_RETURN_IF_ERROR(store->put_kernel(kernel("j1", 5, 2.0)));
      return Status::error("inner failed");
    });
    EXPECT_FALSE(inner.is_ok());
    return store->put_kernel(kernel("j1", 1, std::nullopt));
  });
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_TRUE(store->job("j1")->has_value());
  auto kernels = store->kernels({});
  ASSERT_EQ(kernels->size(), 1u);
  EXPECT_EQ((*kernels)[0].verdict, 1);
}

TEST(StoreIds, UuidsAreV4AndUnique) {
  std::regex v4("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    std::string id = new_uuid();
    EXPECT_TRUE(std::regex_match(id, v4)) << id;
    seen.insert(id);
  }
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(StoreIds, TimestampsAreIsoUtcWithMilliseconds) {
  std::string now = now_iso8601();
  EXPECT_TRUE(std::regex_match(now, std::regex(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$)")))
      << now;
  EXPECT_GT(now, "2024-01-01T00:00:00.000Z");
}

TEST_F(StoreTest, SchemaOneDatabaseMigratesKeepingItsKernels) {
  // A file as schema 1 left it: migration 1 only, one job and one kernel.
  ASSERT_TRUE(make_dirs(db_path_.parent_path()).is_ok());
  raw_sql(
      std::string(schema_migrations()[0].sql) +
      "INSERT INTO meta (key, value) VALUES ('schema_version', '1');"
      "INSERT INTO jobs (job_name, created_at, updated_at) VALUES ('old', 't', 't');"
      "INSERT INTO kernels (uuid, job_name, verdict, created_at) VALUES ('k1', 'old', 5, 't');");
  auto store = open_store();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), latest_schema_version());
  auto k = store->kernel("k1");
  ASSERT_TRUE(k.is_ok() && k->has_value()) << k.message();
  EXPECT_EQ((*k)->verdict, 5);
  EXPECT_EQ((*k)->feedback, "");
  EXPECT_EQ((*k)->island, 0);
}

TEST_F(StoreTest, SpeedupIntervalRoundTripsAndIsNullWithoutOne) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->put_job(job_named("j1")).is_ok());
  KernelRecord measured = kernel("j1", 5, 1.23);
  measured.speedup_interval = KernelRecord::Interval{1.20, 1.26, 0.95, 12};
  KernelRecord single = kernel("j1", 5, 1.5);  // one pair: unbounded above
  single.speedup_interval =
      KernelRecord::Interval{0, std::numeric_limits<double>::infinity(), 0.9, 1};
  KernelRecord old = kernel("j1", 5, 1.1);  // no interval
  for (const KernelRecord* k : {&measured, &single, &old})
    ASSERT_TRUE(store->put_kernel(*k).is_ok());

  auto got = store->kernel(measured.uuid);
  ASSERT_TRUE(got.is_ok() && got->has_value()) << got.message();
  ASSERT_TRUE((*got)->speedup_interval.has_value());
  EXPECT_DOUBLE_EQ((*got)->speedup_interval->lo, 1.20);
  EXPECT_DOUBLE_EQ((*got)->speedup_interval->hi, 1.26);
  EXPECT_DOUBLE_EQ((*got)->speedup_interval->confidence, 0.95);
  EXPECT_EQ((*got)->speedup_interval->batches, 12);

  got = store->kernel(single.uuid);
  ASSERT_TRUE((*got)->speedup_interval.has_value());
  EXPECT_EQ((*got)->speedup_interval->hi, std::numeric_limits<double>::infinity());
  EXPECT_EQ((*got)->speedup_interval->batches, 1);
  EXPECT_EQ(raw_sql("SELECT coalesce(speedup_hi, 'null') FROM kernels WHERE uuid = '" +
                    single.uuid + "'"),
            "null");

  got = store->kernel(old.uuid);
  EXPECT_FALSE((*got)->speedup_interval.has_value());
  EXPECT_EQ(raw_sql("SELECT count(*) FROM kernels WHERE uuid = '" + old.uuid +
                    "' AND speedup_lo IS NULL AND speedup_hi IS NULL AND speedup_confidence IS "
                    "NULL AND speedup_batches IS NULL"),
            "1");
}

TEST_F(StoreTest, SchemaFourDatabaseGainsNullIntervals) {
  // A file as schema 4 left it: its kernels read back without an interval.
  ASSERT_TRUE(make_dirs(db_path_.parent_path()).is_ok());
  std::string sql;
  for (const Migration& m : schema_migrations())
    if (m.version <= 4) sql += m.sql;
  raw_sql(sql +
          "INSERT INTO meta (key, value) VALUES ('schema_version', '4');"
          "INSERT INTO jobs (job_name, created_at, updated_at) VALUES ('old', 't', 't');"
          "INSERT INTO kernels (uuid, job_name, verdict, speedup, created_at) "
          "VALUES ('k1', 'old', 5, 1.4, 't');");
  auto store = open_store();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), latest_schema_version());
  auto k = store->kernel("k1");
  ASSERT_TRUE(k.is_ok() && k->has_value()) << k.message();
  EXPECT_DOUBLE_EQ(*(*k)->speedup, 1.4);
  EXPECT_FALSE((*k)->speedup_interval.has_value());
}

TEST_F(StoreTest, ReferenceTimingsRoundTripReplaceByKeyAndListNewestFirst) {
  auto store = open_store();
  ASSERT_TRUE(store);
  ReferenceTimingRecord a{"key-a",
                          "task1",
                          "CUDA",
                          "h200",
                          "NVIDIA H200",
                          R"({"device":"NVIDIA H200"})",
                          R"({"n=1":{"median_ms":1.5}})",
                          "j1",
                          "2025-01-01T00:00:00.000Z"};
  ReferenceTimingRecord b = a;
  b.timing_key = "key-b";
  b.device = "NVIDIA H100";
  b.created_at = "2025-02-01T00:00:00.000Z";
  ReferenceTimingRecord other_task = a;
  other_task.timing_key = "key-c";
  other_task.task_hash = "task2";
  for (const auto* r : {&a, &b, &other_task}) ASSERT_TRUE(store->put_reference_timing(*r).is_ok());
  auto rows = store->reference_timings("task1");
  ASSERT_TRUE(rows.is_ok()) << rows.message();
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].timing_key, "key-b");  // newest first
  EXPECT_EQ((*rows)[1].timing_key, "key-a");
  EXPECT_EQ((*rows)[1].language, "CUDA");
  EXPECT_EQ((*rows)[1].gpu_arch, "h200");
  EXPECT_EQ((*rows)[1].device, "NVIDIA H200");
  EXPECT_EQ((*rows)[1].key_json, a.key_json);
  EXPECT_EQ((*rows)[1].timings_json, a.timings_json);
  EXPECT_EQ((*rows)[1].job_name, "j1");

  // The same key again: replaced, not added; created_at filled when empty.
  a.timings_json = R"({"n=1":{"median_ms":1.4}})";
  a.job_name = "j2";
  a.created_at = "";
  ASSERT_TRUE(store->put_reference_timing(a).is_ok());
  rows = store->reference_timings("task1");
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].timing_key, "key-a");  // now the newest
  EXPECT_EQ((*rows)[0].job_name, "j2");
  EXPECT_EQ((*rows)[0].timings_json, a.timings_json);
  EXPECT_GT((*rows)[0].created_at, "2025-02-01");

  ReferenceTimingRecord keyless;
  keyless.task_hash = "task1";
  EXPECT_FALSE(store->put_reference_timing(keyless).is_ok());
  // Kept when the job that made it is deleted: no foreign key to jobs.
  ASSERT_TRUE(store->put_job(job_named("j2")).is_ok());
  ASSERT_TRUE(store->delete_job("j2").is_ok());
  EXPECT_EQ(store->reference_timings("task1")->size(), 2u);
}

TEST_F(StoreTest, SchemaFiveDatabaseGainsAnEmptyReferenceTimingsTable) {
  // A file as schema 5 left it (before reference timings were kept): it migrates, keeps its
  // kernels and takes reference timings.
  ASSERT_TRUE(make_dirs(db_path_.parent_path()).is_ok());
  std::string sql;
  for (const Migration& m : schema_migrations())
    if (m.version <= 5) sql += m.sql;
  raw_sql(sql +
          "INSERT INTO meta (key, value) VALUES ('schema_version', '5');"
          "INSERT INTO jobs (job_name, created_at, updated_at) VALUES ('old', 't', 't');"
          "INSERT INTO kernels (uuid, job_name, verdict, speedup, created_at) "
          "VALUES ('k1', 'old', 5, 1.4, 't');");
  EXPECT_EQ(raw_sql("SELECT count(*) FROM sqlite_master WHERE name = 'reference_timings'"), "0");
  auto store = open_store();
  ASSERT_TRUE(store);
  EXPECT_EQ(store->schema_version(), latest_schema_version());
  EXPECT_GE(latest_schema_version(), 6);
  auto k = store->kernel("k1");
  ASSERT_TRUE(k.is_ok() && k->has_value()) << k.message();
  EXPECT_DOUBLE_EQ(*(*k)->speedup, 1.4);
  auto rows = store->reference_timings("any");
  ASSERT_TRUE(rows.is_ok()) << rows.message();
  EXPECT_TRUE(rows->empty());
  ReferenceTimingRecord t{"key", "any", "CPP", "cpu", "cpu0", "{}", "{}", "old", ""};
  ASSERT_TRUE(store->put_reference_timing(t).is_ok());
  EXPECT_EQ(store->reference_timings("any")->size(), 1u);
  EXPECT_EQ(raw_sql("SELECT group_concat(name) FROM sqlite_master WHERE type = 'index' AND "
                    "tbl_name = 'reference_timings' AND name LIKE 'reference_timings_by_%'"),
            "reference_timings_by_task");
}

TEST_F(StoreTest, SchemaSixDatabaseGainsPromptVariantsKeptPerJob) {
  // A file as schema 6 left it migrates: its kernels read with no prompt variant, and the job
  // takes variants, replaced by id, deleted with the job.
  ASSERT_TRUE(make_dirs(db_path_.parent_path()).is_ok());
  std::string sql;
  for (const Migration& m : schema_migrations())
    if (m.version <= 6) sql += m.sql;
  raw_sql(sql +
          "INSERT INTO meta (key, value) VALUES ('schema_version', '6');"
          "INSERT INTO jobs (job_name, created_at, updated_at) VALUES ('old', 't', 't');"
          "INSERT INTO kernels (uuid, job_name, verdict, speedup, created_at) "
          "VALUES ('k1', 'old', 5, 1.4, 't');");
  auto store = open_store();
  ASSERT_TRUE(store);
  EXPECT_GE(latest_schema_version(), 7);
  auto old = store->kernel("k1");
  ASSERT_TRUE(old.is_ok() && old->has_value()) << old.message();
  EXPECT_FALSE((*old)->prompt_variant.has_value());

  ASSERT_TRUE(store->put_job(job_named("meta")).is_ok());
  KernelRecord k = kernel("meta", 5, 1.1);
  k.prompt_variant = 2;
  ASSERT_TRUE(store->put_kernel(k).is_ok());
  EXPECT_EQ((*store->kernel(k.uuid))->prompt_variant, 2);

  PromptVariantRecord shipped;
  shipped.job_name = "meta";
  shipped.variant_id = 1;
  shipped.text = "## Tips";
  PromptVariantRecord second = shipped;
  second.variant_id = 2;
  second.parent_id = 1;
  second.text = "## Better tips";
  second.created_trial = 2;
  ASSERT_TRUE(store->put_prompt_variant(second).is_ok());
  ASSERT_TRUE(store->put_prompt_variant(shipped).is_ok());
  second.score = -0.25;
  second.uses = 4;
  second.dropped = true;
  ASSERT_TRUE(store->put_prompt_variant(second).is_ok());
  auto variants = store->prompt_variants("meta");
  ASSERT_TRUE(variants.is_ok()) << variants.message();
  ASSERT_EQ(variants->size(), 2u);
  EXPECT_EQ((*variants)[0].variant_id, 1);
  EXPECT_FALSE((*variants)[0].parent_id.has_value());
  EXPECT_FALSE((*variants)[0].score.has_value());
  EXPECT_EQ((*variants)[1].parent_id, 1);
  EXPECT_EQ((*variants)[1].text, "## Better tips");
  EXPECT_EQ((*variants)[1].created_trial, 2);
  EXPECT_DOUBLE_EQ(*(*variants)[1].score, -0.25);
  EXPECT_EQ((*variants)[1].uses, 4);
  EXPECT_TRUE((*variants)[1].dropped);
  EXPECT_FALSE((*variants)[1].created_at.empty());
  EXPECT_TRUE(store->prompt_variants("old")->empty());

  ASSERT_TRUE(store->delete_job("meta").is_ok());
  EXPECT_TRUE(store->prompt_variants("meta")->empty());
}

TEST_F(StoreTest, LlmCallsRoundTripPerJobAndKey) {
  auto store = open_store();
  ASSERT_TRUE(store);
  LlmCallRecord call;
  call.job_name = "j";
  call.call_key = "generate:t1:b0";
  call.answer = "```c\nint x;\n```";
  EXPECT_FALSE(store->put_llm_call(call).is_ok()) << "the job must exist first";
  ASSERT_TRUE(store->put_job(job_named("j")).is_ok());
  call.trial = 1;
  call.server = "openai:m";
  call.model = "m";
  call.truncated = true;
  call.prompt_tokens = 12;
  call.completion_tokens = 34;
  call.cost = 0.5;
  call.attempts = 3;
  call.cached_tokens = 8;  // schema 4
  call.cache_write_tokens = 2;
  call.reasoning_tokens = 20;
  ASSERT_TRUE(store->put_llm_call(call).is_ok());
  LlmCallRecord feedback = call;
  feedback.call_key = "feedback:k1";
  feedback.purpose = "feedback";
  ASSERT_TRUE(store->put_llm_call(feedback).is_ok());

  auto got = store->llm_call("j", "generate:t1:b0");
  ASSERT_TRUE(got.is_ok() && got->has_value()) << got.message();
  EXPECT_EQ((*got)->answer, call.answer);
  EXPECT_TRUE((*got)->truncated);
  EXPECT_EQ((*got)->completion_tokens, 34);
  EXPECT_EQ((*got)->attempts, 3);
  EXPECT_DOUBLE_EQ((*got)->cost, 0.5);
  EXPECT_EQ((*got)->cached_tokens, 8);
  EXPECT_EQ((*got)->cache_write_tokens, 2);
  EXPECT_EQ((*got)->reasoning_tokens, 20);
  auto totals = store->llm_totals("j");
  ASSERT_TRUE(totals.is_ok()) << totals.message();
  EXPECT_EQ(totals->cached_tokens, 16);  // both calls
  EXPECT_EQ(totals->cache_write_tokens, 4);
  EXPECT_EQ(totals->reasoning_tokens, 40);
  auto none = store->llm_call("j", "generate:t1:b1");
  ASSERT_TRUE(none.is_ok());
  EXPECT_FALSE(none->has_value());
  auto all = store->llm_calls("j");
  ASSERT_TRUE(all.is_ok());
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[1].purpose, "feedback");

  KernelRecord k = kernel("j", 5, 1.5);
  k.feedback = "the loads are not coalesced";
  k.island = 1;
  k.finish_reason = "stop";
  ASSERT_TRUE(store->put_kernel(k).is_ok());
  auto back = store->kernel(k.uuid);
  ASSERT_TRUE(back.is_ok() && back->has_value());
  EXPECT_EQ((*back)->feedback, k.feedback);
  EXPECT_EQ((*back)->island, 1);
  EXPECT_EQ((*back)->finish_reason, "stop");
}

TEST_F(StoreTest, NoRegisteredSecretIsStored) {
  auto store = open_store();
  ASSERT_TRUE(store);
  register_secret("KF_STORE_TEST_KEY", "sk-store-test-0123456789");
  JobRecord job = job_named("j-secret");
  job.progress_json =
      R"({"stage": "failed", "error": "HTTP 401: bad key sk-store-test-0123456789"})";
  ASSERT_TRUE(store->put_job(job).is_ok());
  KernelRecord k = kernel("j-secret", 0, std::nullopt);
  k.reason = "no answer from the LLM: echo sk-store-test-0123456789";
  k.prompt = "token=sk-store-test-0123456789";
  ASSERT_TRUE(store->put_kernel(k).is_ok());
  LlmCallRecord call;
  call.job_name = "j-secret";
  call.call_key = "generate:t1:b0";
  call.answer = "sk-store-test-0123456789";
  ASSERT_TRUE(store->put_llm_call(call).is_ok());
  clear_secrets();

  auto back = store->kernel(k.uuid);
  ASSERT_TRUE(back.is_ok() && back->has_value()) << back.message();
  EXPECT_EQ((*back)->reason, "no answer from the LLM: echo [redacted KF_STORE_TEST_KEY]");
  EXPECT_EQ((*back)->prompt, "token=[redacted KF_STORE_TEST_KEY]");
  auto j = store->job("j-secret");
  ASSERT_TRUE(j.is_ok() && j->has_value());
  EXPECT_EQ((*j)->progress_json.find("sk-store-test"), std::string::npos) << (*j)->progress_json;
  auto c = store->llm_call("j-secret", "generate:t1:b0");
  ASSERT_TRUE(c.is_ok() && c->has_value());
  EXPECT_EQ((*c)->answer, "[redacted KF_STORE_TEST_KEY]");
  // Nowhere in the file either (WAL included).
  std::string bytes;
  for (const fs::path& file : {db_path_, fs::path(db_path_.string() + "-wal")})
    if (auto text = read_file(file); text.is_ok()) bytes += *text;
  EXPECT_EQ(bytes.find("sk-store-test-0123456789"), std::string::npos);
}

}  // namespace
}  // namespace kf
