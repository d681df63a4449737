// Iteration 0's kernel: stored best, the best of named jobs, a file, a run directory, or the block.
#include "search/seed_kernel.h"

#include <optional>

#include <nlohmann/json.hpp>

#include "util/fs.h"
#include "util/strings.h"

namespace kf {

namespace {

std::string to_hex(std::string_view bytes) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

std::optional<std::string> from_hex(std::string_view hex) {
  if (hex.size() % 2 != 0) return std::nullopt;
  std::string out(hex.size() / 2, '\0');
  for (size_t i = 0; i < out.size(); ++i) {
    int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;
    out[i] = static_cast<char>(hi * 16 + lo);
  }
  return out;
}

}  // namespace

std::string encode_codes(const std::vector<std::string>& codes) {
  if (codes.size() == 1) return codes.front();
  // JSON strings hold only UTF-8: a block with other bytes (from an LLM answer) is kept exactly
  // as {"hex": "..."} instead of making dump() throw.
  nlohmann::json array = nlohmann::json::array();
  for (const auto& code : codes) {
    if (is_valid_utf8(code))
      array.push_back(code);
    else
      array.push_back({{"hex", to_hex(code)}});
  }
  return array.dump();
}

std::vector<std::string> decode_codes(const std::string& stored, size_t num_blocks) {
  if (num_blocks > 1) {
    auto parsed = nlohmann::json::parse(stored, nullptr, false);
    if (parsed.is_array() && parsed.size() == num_blocks) {
      std::vector<std::string> codes;
      for (const auto& c : parsed) {
        if (c.is_string()) {
          codes.push_back(c.get<std::string>());
        } else if (c.is_object() && c.contains("hex") && c["hex"].is_string()) {
          if (auto bytes = from_hex(c["hex"].get<std::string>()))
            codes.push_back(std::move(*bytes));
        }
      }
      if (codes.size() == num_blocks) return codes;
    }
  }
  return {stored};
}

namespace {

size_t evolve_count(const JobContext& job) {
  return job.task.blocks_of(BlockKind::kEvolve).size();
}

// `jobs` empty = any job of the database.
Result<SeedKernel> from_stored(JobContext& job, const std::vector<std::string>& jobs,
                               const std::string& what) {
  auto best = job.store->best_kernel(job.task_name, job.gpu_arch,
                                     std::string(language_name(job.language)), jobs);
  if (!best) return best.status();
  SeedKernel seed;
  if (!best->has_value()) {
    if (!jobs.empty())
      return Status::error(what + ": " +
                           (jobs.size() == 1 ? "job '" + jobs[0] + "' has"
                                             : "jobs '" + join(jobs, "', '") + "' have") +
                           " no correct kernel for task '" + job.task_name + "' on " +
                           job.gpu_arch + " (" + std::string(language_name(job.language)) +
                           ") in " + job.store->path().string() +
                           "; list the jobs with `kernelfoundry jobs`, or set "
                           "kernels_iter_0_path=null to start from the EVOLVE block");
    seed.label = "EVOLVE block as written";
    seed.note = "start_from_best: no correct kernel stored yet for task '" + job.task_name +
                "' on " + job.gpu_arch + " (" + std::string(language_name(job.language)) +
                "); starting from the EVOLVE block";
    return seed;
  }
  const KernelRecord& k = **best;
  seed.codes = decode_codes(k.code, evolve_count(job));
  seed.source_uuid = k.uuid;
  seed.label =
      strprintf("best stored kernel (job %s, %.3fx)", k.job_name.c_str(), k.speedup.value_or(0));
  return seed;
}

Result<SeedKernel> from_file(JobContext& job, const fs::path& path, const std::string& what) {
  auto text = read_file(path);
  if (!text) return Status::error(what + ": " + text.message());
  SeedKernel seed;
  seed.label = path.filename().string();
  // A whole task file (with EVOLVE markers) contributes its blocks; a bare file is the block.
  auto blocks = parse_blocks(path.filename().string(), *text);
  std::vector<std::string> evolve;
  if (blocks) {
    for (const Block& b : *blocks)
      if (b.kind == BlockKind::kEvolve) evolve.push_back(b.content);
  }
  if (!evolve.empty()) {
    seed.codes = std::move(evolve);
  } else {
    seed.codes = {*text};
  }
  if (seed.codes.size() != evolve_count(job))
    return Status::error(strprintf("%s: %s holds %zu EVOLVE block(s), the task has %zu",
                                   what.c_str(), path.string().c_str(), seed.codes.size(),
                                   evolve_count(job)));
  return seed;
}

Result<SeedKernel> from_run_dir(JobContext& job, const fs::path& dir, const std::string& what) {
  auto text = read_file(dir / "results.json");
  if (!text)
    return Status::error(what + ": " + dir.string() +
                         " is a directory without results.json; point kernels_iter_0_path at a "
                         "run directory (runs/<job_name>) or a kernel file");
  auto results = nlohmann::json::parse(*text, nullptr, false);
  std::string uuid = results.is_object() ? results.value("best_uuid", "") : "";
  if (uuid.empty())
    return Status::error(what + ": " + (dir / "results.json").string() +
                         " names no best kernel (no correct kernel in that run)");
  auto k = job.store->kernel(uuid);
  if (!k) return k.status();
  if (!k->has_value())
    return Status::error(what + ": the best kernel " + uuid + " of " + dir.string() +
                         " is not in " + job.store->path().string() +
                         "; use the kernels_db_path of that run");
  SeedKernel seed;
  seed.codes = decode_codes((*k)->code, evolve_count(job));
  seed.source_uuid = uuid;
  seed.label = "best kernel of " + dir.string();
  return seed;
}

}  // namespace

Result<SeedKernel> resolve_seed_kernel(JobContext& job) {
  const Config& c = job.config;
  if (c.has("kernels_iter_0_path")) {
    std::string value = c.get_string("kernels_iter_0_path");
    std::string what = "kernels_iter_0_path '" + value + "' (from " +
                       c.origin("kernels_iter_0_path").describe() + ")";
    if (value == "best") return from_stored(job, {}, what);
    if (starts_with(value, "best-")) {
      // `best-<job>`, or the Python KernelFoundry's `best-<job1>/<job2>`: the best of those jobs.
      std::vector<std::string> jobs;
      for (const std::string& name : split(value.substr(5), '/'))
        if (!trim(name).empty()) jobs.push_back(trim(name));
      if (jobs.empty())
        return Status::error(what +
                             ": names no job; write best-<job_name>, or "
                             "best-<job_name>/<job_name> for the best of several jobs");
      return from_stored(job, jobs, what);
    }
    fs::path path(value);
    std::error_code ec;
    if (fs::is_directory(path, ec)) return from_run_dir(job, path, what);
    if (fs::is_regular_file(path, ec)) return from_file(job, path, what);
    return Status::error(what +
                         ": no such file or directory; give a kernel file, a run directory "
                         "(runs/<job_name>), `best`, `best-<job_name>` or "
                         "`best-<job_name>/<job_name>`");
  }
  if (c.get_bool("start_from_best")) return from_stored(job, {}, "start_from_best");
  SeedKernel seed;
  seed.label = "EVOLVE block as written";
  return seed;
}

}  // namespace kf
