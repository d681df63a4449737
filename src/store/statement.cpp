// Statement: RAII prepared statements and SQLite errors as Status.
#include "store/statement.h"

#include <sqlite3.h>

namespace kf {

Status sqlite_error(sqlite3* db, const std::string& path, std::string_view what) {
  std::string message = "kernel database " + path + ": " + std::string(what);
  if (db != nullptr) message += ": " + std::string(sqlite3_errmsg(db));
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

Statement& Statement::bind_text(int index, std::string_view value) {
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
