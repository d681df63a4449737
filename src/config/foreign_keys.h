// Keys of the Python KernelFoundry's (Hydra) inference configs that mean nothing here: `_target_`
// (a Python class path) and `verbose`. They are dropped, with one note line per run.
#pragma once

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/tree.h"

namespace kf::cfg {

// What was dropped across every layer of one composition.
struct ForeignKeys {
  std::set<std::string> names;  // "_target_", "verbose"
  struct Place {
    std::string map;  // internal path of the map that held them ("inference.servers.0")
    Origin origin;    // where the first of them was written
  };
  std::vector<Place> places;  // in the order found, one per map
};

// Whether `internal` ("inference.servers.0.verbose") is such a key: `_target_` or `verbose`
// anywhere inside `inference` or `feedback_llm_config` (the server maps), and not a schema key.
bool is_foreign_key(const std::string& internal);

// Removes every foreign key under `node` (which sits at `internal`) with its origins, recording
// each in `found`. Foreign keys anywhere else stay, for the unknown-key check to report.
void drop_foreign_keys(nlohmann::json& node, const std::string& internal, OriginMap& origins,
                       ForeignKeys* found);
// Records one dropped key (a command-line argument `inference.servers.0.verbose=true`).
void record_foreign_key(const std::string& internal, const Origin& origin, ForeignKeys* found);

// The one note line for the user, without a "note: " prefix; "" when nothing was dropped:
// "ignoring `_target_`, `verbose` in inference.servers[0] (x/config.yaml:4): ...".
std::string foreign_keys_note(const ForeignKeys& found);

}  // namespace kf::cfg
