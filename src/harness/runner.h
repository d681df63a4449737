// The two phases of the protocol: correctness (every shape x seed, two calls, integrity checks)
// and benchmark (adaptive cold timing, re-checked afterwards). Results go into a Report.
#pragma once

#include <string>
#include <vector>

#include "harness/case_state.h"
#include "harness/options.h"
#include "harness/report.h"
#include "kernelfoundry/harness.h"

namespace kernelfoundry {

// Exactly one benchmark with shapes; shapes well-formed and unique. False with a message.
bool validate_suite(const Suite& suite, std::string* err);
// Correctness shapes followed by the benchmark shapes not already among them.
std::vector<Shape> checked_shapes(const Suite& suite);

class Runner {
 public:
  Runner(Problem& problem, const Suite& suite, const Options& options, RunContext& context,
         Report& report);

  // Each stops at the first failure, recorded in the report.
  void correctness();
  void benchmark();

 private:
  struct CallOutcome;
  struct OutputStats;

  Impl test_impl() const { return options_.ref ? Impl::Reference : Impl::Candidate; }
  // `bytes` receives the size of the case's buffers (inputs and both output sets).
  bool check_case(const Shape& shape, int seed, std::vector<OutputStats>* stats, double* bytes);
  bool benchmark_shape(const Shape& shape);

  bool run_setup(CaseState& cs);
  bool compute_expected(CaseState& cs);
  void prepare_set(CaseState& cs, int set, int variant);
  CallOutcome invoke(CaseState& cs, Impl impl, int set, int call);
  // Guards always; input checksums when `inputs` (they cost a download of every input).
  bool check_integrity(CaseState& cs, int set, CallOutcome* outcome, bool inputs = true);
  CallOutcome call(CaseState& cs, Impl impl, int set, int call, int variant);
  // Compares the test set with the expected set; records a case per output. `where` starts the
  // failure reason ("correctness failed on shape .. seed .. call .."). The host copies of the
  // outputs stay in actual_[slot].
  bool compare_outputs(CaseState& cs, const std::string& phase, int call, int variant,
                       const std::string& where, std::vector<OutputStats>* stats, int slot);
  void record_failure(const CaseState& cs, const std::string& phase, int call,
                      const std::string& where, const CallOutcome& outcome);
  void note_nondeterminism(const CaseState& cs,
                           const std::vector<std::vector<unsigned char>>& first,
                           const std::vector<std::vector<unsigned char>>& second);

  Problem& problem_;
  const Suite& suite_;
  const Options& options_;
  RunContext& ctx_;
  Report& report_;
  std::vector<std::vector<unsigned char>> expected_;  // per output spec, of the current case
  std::vector<long> expected_counts_;
  // Host copies reused from case to case, so large buffers do not fault in fresh pages per call:
  // the test set's outputs of call 1 and call 2, and downloads for input checksums.
  std::vector<std::vector<unsigned char>> actual_[2];
  std::vector<unsigned char> staging_;
  // Where the correctness phase's time goes (reported as phase_seconds "correctness.<step>").
  struct StepTimes {
    double setup = 0, reference = 0, calls = 0, checks = 0;
  } times_;
};

}  // namespace kernelfoundry
