// What the judge keeps between the checks of one job (--serve): the reference's stored outputs,
// and per benchmark shape the inputs of the timed calls' seed and the outputs for the call after
// timing, so a check costs reading and comparing the candidate's outputs, not regenerating them.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "harness/case_state.h"
#include "harness/dump.h"

namespace kernelfoundry {

// One output the candidate's must match.
struct ExpectedOutput {
  std::string name;
  DType dtype = DType::F32;
  Buffer::Role role = Buffer::Role::Output;
  long count = 0;
  Tolerance tol;
  std::vector<unsigned char> bytes;
};

class JudgeCache {
 public:
  // Keeps at most `budget_bytes` (0: nothing; a one-shot checker).
  explicit JudgeCache(double budget_bytes) : budget_(budget_bytes) {}
  JudgeCache(const JudgeCache&) = delete;
  JudgeCache& operator=(const JudgeCache&) = delete;

  // Room for `bytes` more; taken when true.
  bool reserve(double bytes) {
    if (used_ + bytes > budget_) return false;
    used_ += bytes;
    return true;
  }
  void release(double bytes) { used_ -= bytes; }

  // The reference's stored outputs (the --expected folder), read once when they fit.
  bool expected_loaded = false;
  std::vector<DumpEntry> expected;
  // Parallel to `expected`: the outputs, empty where they did not fit (then read per check).
  std::vector<std::vector<ExpectedOutput>> expected_outputs;
  // Per benchmark shape id: the case of the timed calls' seed (inputs as drawn) and the reference's
  // outputs for the call after timing.
  struct TimedCase {
    std::unique_ptr<CaseState> state;
    double bytes = 0;  // what it holds against the budget
  };
  std::map<std::string, TimedCase> timed_cases;
  std::map<std::string, std::vector<ExpectedOutput>> post_outputs;
  // Host copies reused from check to check (no fresh page faults per candidate).
  std::vector<unsigned char> actual;
  std::vector<ExpectedOutput> timed_want;

 private:
  double budget_ = 0;
  double used_ = 0;
};

}  // namespace kernelfoundry
