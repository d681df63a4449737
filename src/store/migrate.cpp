// Applies the schema migrations in order, one transaction each, and refuses newer databases.
#include <sqlite3.h>

#include <cstdlib>

#include "store/schema.h"
#include "store/statement.h"

namespace kf {

namespace {

Status exec(sqlite3* db, const std::string& path, const char* sql, const std::string& what) {
  if (sqlite3_exec(db, sql, nullptr, nullptr, nullptr) != SQLITE_OK)
    return sqlite_error(db, path, what);
  return Status::ok();
}

// 0 for a fresh file: `meta` is created by migration 1.
Result<int> read_version(sqlite3* db, const std::string& path) {
  const std::string what = "cannot read the schema version";
  Result<Statement> has_meta = Statement::prepare(
      db, path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'meta'");
  if (!has_meta) return has_meta.status();
  Result<bool> row = has_meta->step(what);
  if (!row) return row.status();
  if (has_meta->int64(0) == 0) return 0;

  Result<Statement> query =
      Statement::prepare(db, path, "SELECT value FROM meta WHERE key = 'schema_version'");
  if (!query) return query.status();
  row = query->step(what);
  if (!row) return row.status();
  if (!*row) return 0;
  std::string text = query->text(0);
  char* end = nullptr;
  long version = std::strtol(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || version < 0)
    return Status::error("kernel database " + path + ": schema_version '" + text +
                         "' in table meta is not a number; the file is damaged");
  return static_cast<int>(version);
}

Status newer_error(const std::string& path, int found) {
  return Status::error("kernel database " + path +
                       " was written by a newer KernelFoundry (schema " + std::to_string(found) +
                       ", this build knows " + std::to_string(latest_schema_version()) +
                       "); upgrade or use another kernels_db_path");
}

// Runs one migration inside an open transaction, unless another connection already did.
Status apply(sqlite3* db, const std::string& path, const Migration& migration) {
  Result<int> current = read_version(db, path);
  if (!current) return current.status();
  if (*current > latest_schema_version()) return newer_error(path, *current);
  if (*current >= migration.version) return Status::ok();
  const std::string what = "cannot migrate to schema " + std::to_string(migration.version);
  KF_RETURN_IF_ERROR(exec(db, path, migration.sql, what));
  Result<Statement> set = Statement::prepare(
      db, path, "INSERT OR REPLACE INTO meta (key, value) VALUES ('schema_version', ?1)");
  if (!set) return set.status();
  return set->bind_text(1, std::to_string(migration.version)).run(what);
}

}  // namespace

Result<int> migrate_schema(sqlite3* db, const std::string& path) {
  Result<int> version = read_version(db, path);
  if (!version) return version.status();
  if (*version > latest_schema_version()) return newer_error(path, *version);
  for (const Migration& migration : schema_migrations()) {
    if (migration.version <= *version) continue;
    // IMMEDIATE takes the write lock first, so two processes opening a fresh file at once
    // serialise here (busy timeout) instead of failing on a lock upgrade.
    KF_RETURN_IF_ERROR(exec(db, path, "BEGIN IMMEDIATE", "cannot start a migration"));
    Status applied = apply(db, path, migration);
    if (applied) applied = exec(db, path, "COMMIT", "cannot commit a migration");
    if (!applied) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      return applied;
    }
    version = migration.version;
  }
  return version;
}

}  // namespace kf
