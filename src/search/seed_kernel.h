// Where a search starts (iteration 0): the EVOLVE block as written, the best stored kernel
// (start_from_best / kernels_iter_0_path: best, best-<job_name>, best-<job1>/<job2>), a file or a
// run directory.
#pragma once

#include <string>
#include <vector>

#include "search/job.h"
#include "util/status.h"

namespace kf {

struct SeedKernel {
  std::vector<std::string> codes;  // one per EVOLVE block; empty = the blocks as written
  std::string label;               // for progress lines: "EVOLVE block as written", ...
  std::string source_uuid;         // the stored kernel it came from, if any
  std::string note;                // a remark for the user (e.g. nothing stored yet)
};

// Resolves iteration 0 from kernels_iter_0_path (wins when set) or start_from_best. Errors name
// the key, the value and the fix.
Result<SeedKernel> resolve_seed_kernel(JobContext& job);

// Kernel code as stored: one block as it is, several as a JSON array of strings (a block that is
// not UTF-8 as {"hex": "<its bytes>"}); decode gives back the exact bytes.
std::string encode_codes(const std::vector<std::string>& codes);
std::vector<std::string> decode_codes(const std::string& stored, size_t num_blocks);

}  // namespace kf
