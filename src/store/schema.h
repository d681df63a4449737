// The database schema as an ordered list of migrations, and the code that applies them
// (internal to store).
#pragma once

#include <string>
#include <vector>

#include "util/status.h"

struct sqlite3;

namespace kf {

struct Migration {
  int version;  // the schema version after it ran: 1, 2, 3, ...
  const char* sql;
};

// Every migration, oldest first. Append only: a shipped migration never changes.
const std::vector<Migration>& schema_migrations();
int latest_schema_version();

// Brings the database at `path` up to latest_schema_version(), one transaction per migration,
// and returns the version it ends at. Refuses a database newer than this build.
Result<int> migrate_schema(sqlite3* db, const std::string& path);

}  // namespace kf
