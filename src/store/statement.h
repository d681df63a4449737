// Statement: a prepared SQLite statement that finalizes itself, with errors as Status that name
// the database file (internal to store).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/status.h"

struct sqlite3;
struct sqlite3_stmt;

namespace kf {

// "kernel database <path>: <what>: <sqlite3_errmsg>; <cause and fix>" (a full disk, a read-only
// file, a lock held too long, a file that is not a database or is corrupt).
Status sqlite_error(sqlite3* db, const std::string& path, std::string_view what);
// The "; <cause and fix>" for an SQLite result code (and the OS errno behind it, 0 = none).
std::string sqlite_fault_hint(int code, int system_errno, const std::string& path);

class Statement {
 public:
  static Result<Statement> prepare(sqlite3* db, const std::string& path, std::string_view sql);
  Statement(Statement&& other) noexcept;
  Statement& operator=(Statement&&) = delete;
  Statement(const Statement&) = delete;
  ~Statement();

  // Parameters are 1-based, as in SQL's ?1. A failed bind is reported by the next step().
  Statement& bind_text(int index, std::string_view value);
  Statement& bind_text_or_null(int index, std::string_view value);  // "" binds NULL
  Statement& bind_int(int index, int64_t value);
  Statement& bind_double(int index, double value);
  Statement& bind_optional(int index, std::optional<double> value);

  // True when a row is ready, false when done. `what` says what we were doing, for the error.
  Result<bool> step(std::string_view what);
  // Steps to the end (statements that return no rows).
  Status run(std::string_view what);

  // Columns are 0-based; NULL reads as "" / 0 / nullopt.
  std::string text(int column) const;
  int64_t int64(int column) const;
  double real(int column) const;
  std::optional<double> optional_real(int column) const;

 private:
  Statement(sqlite3* db, const std::string& path, sqlite3_stmt* stmt)
      : db_(db), path_(path), stmt_(stmt) {}
  void check_bind(int rc);

  sqlite3* db_;
  std::string path_;
  sqlite3_stmt* stmt_;
  int bind_error_ = 0;
};

}  // namespace kf
