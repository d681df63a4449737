// Statement: RAII prepared statements and SQLite errors as Status.
#include "store/statement.h"

#include <sqlite3.h>

#include "util/fs.h"
#include "util/secrets.h"

namespace kf {

std::string sqlite_fault_hint(int code, int system_errno, const std::string& path) {
  std::string os = system_errno != 0 ? " (" + io_error_text(system_errno) + ")" : "";
  switch (code & 0xff) {
    case SQLITE_FULL:
      return "; the disk holding it is full" + os +
             ": free some space and run again (the last change was not saved)";
    case SQLITE_READONLY:
      return "; it cannot be written" + os + ": make " + path +
             " and its folder writable (SQLite also writes " + path + "-wal and " + path +
             "-shm beside it), or set paths.kernels_db_path to a writable path";
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return "; another process (another kernelfoundry job, an open sqlite3 shell) holds a lock "
             "on it for longer than database.busy_timeout_ms: wait until it is done, or raise "
             "database.busy_timeout_ms";
    case SQLITE_NOTADB:
      return "; the file is not an SQLite database: set paths.kernels_db_path to the kernel "
             "database, or move " +
             path + " away to start a new one";
    case SQLITE_CORRUPT:
      return "; the database is damaged: restore it from a backup, salvage it with `sqlite3 " +
             path + " .recover`, or move it away to start a new one";
    case SQLITE_IOERR:
      return "; reading or writing the file failed" + os + ": check the disk";
    case SQLITE_CANTOPEN:
      return "; the file cannot be opened" + os +
             ": check that its folder exists and is writable, or set paths.kernels_db_path";
    default:
      return os;
  }
}

Status sqlite_error(sqlite3* db, const std::string& path, std::string_view what) {
  std::string message = "kernel database " + path + ": " + std::string(what);
  if (db != nullptr) {
    message += ": " + std::string(sqlite3_errmsg(db));
    message += sqlite_fault_hint(sqlite3_extended_errcode(db), sqlite3_system_errno(db), path);
  }
  return Status::error(message);
}

Result<Statement> Statement::prepare(sqlite3* db, const std::string& path, std::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return sqlite_error(db, path, "cannot prepare '" + std::string(sql.substr(0, 60)) + "'");
  }
  return Statement(db, path, stmt);
}

Statement::Statement(Statement&& other) noexcept
    : db_(other.db_),
      path_(std::move(other.path_)),
      stmt_(other.stmt_),
      bind_error_(other.bind_error_) {
  other.stmt_ = nullptr;
}

Statement::~Statement() {
  sqlite3_finalize(stmt_);
}

void Statement::check_bind(int rc) {
  if (rc != SQLITE_OK && bind_error_ == SQLITE_OK) bind_error_ = rc;
}

// Every text a row receives passes here: no registered secret (util/secrets.h) is ever stored.
// Query parameters are redacted the same way, so they still match what was stored.
Statement& Statement::bind_text(int index, std::string_view value) {
  if (contains_secret(value)) {
    std::string redacted = redact_secrets(value);
    check_bind(sqlite3_bind_text64(stmt_, index, redacted.data(), redacted.size(), SQLITE_TRANSIENT,
                                   SQLITE_UTF8));
    return *this;
  }
  check_bind(
      sqlite3_bind_text64(stmt_, index, value.data(), value.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  return *this;
}

Statement& Statement::bind_text_or_null(int index, std::string_view value) {
  if (value.empty()) {
    check_bind(sqlite3_bind_null(stmt_, index));
    return *this;
  }
  return bind_text(index, value);
}

Statement& Statement::bind_int(int index, int64_t value) {
  check_bind(sqlite3_bind_int64(stmt_, index, value));
  return *this;
}

Statement& Statement::bind_double(int index, double value) {
  check_bind(sqlite3_bind_double(stmt_, index, value));
  return *this;
}

Statement& Statement::bind_optional(int index, std::optional<double> value) {
  if (!value) {
    check_bind(sqlite3_bind_null(stmt_, index));
    return *this;
  }
  return bind_double(index, *value);
}

Result<bool> Statement::step(std::string_view what) {
  if (bind_error_ != SQLITE_OK)
    return Status::error("kernel database " + path_ + ": " + std::string(what) +
                         ": cannot bind a parameter: " + sqlite3_errstr(bind_error_));
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return sqlite_error(db_, path_, what);
}

Status Statement::run(std::string_view what) {
  while (true) {
    Result<bool> row = step(what);
    if (!row) return row.status();
    if (!*row) return Status::ok();
  }
}

std::string Statement::text(int column) const {
  const unsigned char* data = sqlite3_column_text(stmt_, column);
  if (data == nullptr) return "";
  return std::string(reinterpret_cast<const char*>(data),
                     static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
}

int64_t Statement::int64(int column) const {
  return sqlite3_column_int64(stmt_, column);
}

double Statement::real(int column) const {
  return sqlite3_column_double(stmt_, column);
}

std::optional<double> Statement::optional_real(int column) const {
  if (sqlite3_column_type(stmt_, column) == SQLITE_NULL) return std::nullopt;
  return real(column);
}

}  // namespace kf
