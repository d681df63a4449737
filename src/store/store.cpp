// Store: opening the database (directories, WAL, migrations) and transactions.
#include "store/store.h"

#include <sqlite3.h>

#include <chrono>
#include <thread>

#include "store/schema.h"
#include "store/statement.h"
#include "util/fs.h"

namespace kf {

namespace {

// Switching a fresh file to WAL needs an exclusive lock, and SQLite reports a concurrent opener
// as SQLITE_BUSY at once instead of calling the busy handler: retry within the busy timeout.
Status enable_wal(sqlite3* db, const std::string& where, int busy_timeout_ms) {
  auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(busy_timeout_ms);
  while (true) {
    Result<Statement> wal = Statement::prepare(db, where, "PRAGMA journal_mode = WAL");
    Result<bool> row = wal ? wal->step("cannot switch to WAL mode") : Result<bool>(wal.status());
    if (row) return Status::ok();
    if ((sqlite3_errcode(db) & 0xff) != SQLITE_BUSY || std::chrono::steady_clock::now() > give_up)
      return row.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// SQLite takes a 0-byte file for a new, empty database. An existing empty file is more likely a
// truncated copy or a failed write than a wish for a fresh database: refuse it, so a job's
// history is never silently replaced by nothing. Another process that is creating the database
// right now writes its first page soon, so a wait tells the two apart: 2 s, as a 250 ms wait was
// once too short on the loaded 2-core CI machine (a job refused the file another process had
// just created).
Status refuse_empty_file(const std::filesystem::path& path) {
  std::error_code ec;
  auto empty = [&] { return fs::is_regular_file(path, ec) && fs::file_size(path, ec) == 0 && !ec; };
  if (!empty()) return Status::ok();
  for (int i = 0; i < 100 && empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (!empty()) return Status::ok();
  return Status::error("kernel database " + path.string() +
                       " exists but is empty (0 bytes): it is not a database, perhaps a truncated "
                       "copy or a write that failed. Restore it from a backup, or delete it to "
                       "start a new database (paths.kernels_db_path)");
}

}  // namespace

Result<std::unique_ptr<Store>> Store::open(const std::filesystem::path& path, int busy_timeout_ms) {
  using R = Result<std::unique_ptr<Store>>;
  if (path.empty()) return R::error("kernels_db_path is empty; set it to a file path");
  const std::string where = path.string();
  if (path.has_parent_path()) {
    if (Status s = make_dirs(path.parent_path()); !s)
      return R::error("cannot create the folder of the kernel database " + where +
                      " (paths.kernels_db_path): " + s.message());
  }
  std::error_code ec;
  if (fs::is_directory(path, ec))
    return R::error("kernel database " + where +
                    " is a directory; set paths.kernels_db_path to a file path");
  KF_RETURN_IF_ERROR(refuse_empty_file(path));

  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(where.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    int system_errno = db != nullptr ? sqlite3_system_errno(db) : 0;
    sqlite3_close_v2(db);
    return R::error("cannot open kernel database " + where + ": " + message +
                    sqlite_fault_hint(rc, system_errno, where));
  }
  std::unique_ptr<Store> store(new Store(db, path));
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  // SQLite silently opens a write-protected file read-only; every job writes, so say it now.
  if (sqlite3_db_readonly(db, "main") == 1)
    return R::error("kernel database " + where + " is read-only" +
                    sqlite_fault_hint(SQLITE_READONLY, 0, where));

  // WAL lets readers (a report, a second job) work while a job writes. Where the file system
  // cannot do WAL (some network mounts) SQLite keeps its rollback journal, which still works.
  // The first statements read the file: a file that is not a database, or a damaged one, shows
  // here (sqlite_error names the cause and the fix).
  KF_RETURN_IF_ERROR(enable_wal(db, where, busy_timeout_ms));
  KF_RETURN_IF_ERROR(store->exec("PRAGMA foreign_keys = ON", "cannot enable foreign keys"));
  // NORMAL is crash-safe in WAL mode; only the last commits may be lost on power failure.
  KF_RETURN_IF_ERROR(store->exec("PRAGMA synchronous = NORMAL", "cannot set synchronous mode"));

  Result<int> version = migrate_schema(db, where);
  if (!version) return version.status();
  store->schema_version_ = *version;
  return store;
}

Store::~Store() {
  sqlite3_close_v2(db_);
}

Status Store::exec(const std::string& sql, const std::string& what) {
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr) != SQLITE_OK)
    return sqlite_error(db_, path_.string(), what);
  return Status::ok();
}

Status Store::transaction(const std::function<Status()>& body) {
  std::lock_guard<std::recursive_mutex> lock(mutex_);
  const bool outer = transaction_depth_ == 0;
  const std::string savepoint = "kf_savepoint_" + std::to_string(transaction_depth_);
  KF_RETURN_IF_ERROR(
      exec(outer ? "BEGIN IMMEDIATE" : "SAVEPOINT " + savepoint, "cannot start a transaction"));
  auto roll_back = [&] {
    // Errors are ignored: SQLite may already have rolled back (e.g. after SQLITE_FULL).
    exec(outer ? "ROLLBACK" : "ROLLBACK TO " + savepoint + "; RELEASE " + savepoint, "");
  };
  ++transaction_depth_;
  Status status;
  try {
    status = body();
  } catch (...) {
    --transaction_depth_;
    roll_back();
    throw;
  }
  --transaction_depth_;
  if (status) status = exec(outer ? "COMMIT" : "RELEASE " + savepoint, "cannot commit");
  if (!status) roll_back();
  return status;
}

}  // namespace kf
