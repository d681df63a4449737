// The two phases of the protocol: correctness (every shape x seed, two calls, integrity checks)
// and benchmark (adaptive cold timing, re-checked afterwards). Results go into a Report.
#pragma once

#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "harness/case_state.h"
#include "harness/dump.h"
#include "harness/judge_cache.h"
#include "harness/options.h"
#include "harness/pace.h"
#include "harness/perturb.h"
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
  // --check: compares the candidate's outputs (options.check_dir) with the reference's
  // (options.expected_dir), running the reference for the timed calls the candidate dumped.
  void check();
  // --serve, before the first check: fills the judge cache (stored outputs, the timed calls'
  // inputs and the outputs after timing of every benchmark shape), so no candidate pays for it.
  void warm_judge();
  // Hidden correctness shapes (--extra-shapes): checked like the listed ones; in the reference's
  // --expected-out run a hidden shape the reference cannot handle is left out with a note.
  void set_hidden_shapes(std::vector<Shape> shapes) { hidden_ = std::move(shapes); }
  // --serve: what check() keeps from one candidate's check to the next (not owned).
  void set_judge_cache(JudgeCache* cache) { cache_ = cache; }
  // The candidate child's paced benchmark (pace.h; not owned): each shape's timed calls run in
  // the batches the evaluator starts.
  void set_pacer(Pacer* pacer) { pacer_ = pacer; }
  // --sweep: the benchmark shapes' cases (inputs set up once) kept from one combination's run to
  // the next (not owned). A case goes back only after a run that found its inputs intact.
  struct CaseCache {
    std::map<std::string, std::unique_ptr<CaseState>> cases;
  };
  void set_case_cache(CaseCache* cache) { case_cache_ = cache; }

  // --serve's "time" request: `calls` timed calls of the reference on benchmark shape `shape_id`
  // (the same procedure as the candidate's paced calls: poison, perturbed inputs, flush unless
  // --warm), appended to *samples_ms. The case (inputs drawn once, warmed up on first use) is
  // kept in *cases between requests. False with the reason recorded when the shape is unknown or
  // the reference fails.
  struct TimingCase {
    std::unique_ptr<CaseState> cs;
    PerturbUndo undo;
    long calls = 0, timed = 0;
    std::vector<unsigned char> picked;  // the candidate's loop copies its picked call's outputs
  };
  bool time_reference(std::map<std::string, TimingCase>* cases, const std::string& shape_id,
                      long calls, std::vector<double>* samples_ms);

 private:
  struct CallOutcome;
  struct OutputStats;

  Impl test_impl() const { return options_.ref ? Impl::Reference : Impl::Candidate; }
  // The candidate child of the split judge: no reference runs here, outputs go to dump_dir.
  bool dumping() const { return !options_.dump_dir.empty(); }
  bool writing_expected() const { return !options_.expected_out.empty(); }
  bool is_hidden(const Shape& shape) const;
  bool is_benchmark_shape(const Shape& shape) const;
  bool dump_case(const Shape& shape, int seed, double* bytes);
  bool expect_case(const Shape& shape, int seed, double* bytes);
  // Copies the test set's outputs to the host and adds them to the dump as one entry.
  // `keep` receives the host copies written (outputs in order, scratch buffers left out).
  // `host`, when given, holds copies already made (indexed like cs.outputs; moved from) instead
  // of the buffers of `set`.
  bool dump_outputs(CaseState& cs, int set, const std::string& kind, int call, int variant,
                    const std::vector<Perturbation>& perturb,
                    std::vector<std::vector<unsigned char>>* keep = nullptr,
                    std::vector<std::vector<unsigned char>>* host = nullptr);
  // The checker's steps: the reference's stored outputs (into the cache where they fit), one
  // entry's outputs read, the reference run on `cs` with its outputs copied to the host, and one
  // handed-over output set compared (records a case per output; `actual` is a reused buffer).
  bool load_expected(JudgeCache& cache);
  bool read_expected(const DumpEntry& e, std::vector<ExpectedOutput>* want);
  bool reference_outputs(CaseState& cs, std::vector<ExpectedOutput>* want);
  // The reference's outputs for the call after timing on `shape` (kept in the cache where they
  // fit, else in *computed); null on failure, recorded.
  const std::vector<ExpectedOutput>* post_outputs(JudgeCache& cache, const Shape& shape,
                                                  std::vector<ExpectedOutput>* computed);
  // The case of the timed calls' seed on `shape`, kept in the cache where it fits (else owned by
  // *owned); null on failure, recorded.
  CaseState* timed_case(JudgeCache& cache, const Shape& shape, std::unique_ptr<CaseState>* owned);
  bool compare_set(const DumpEntry& entry, const std::vector<ExpectedOutput>& want,
                   const std::string& phase, int variant, const std::string& where,
                   std::vector<unsigned char>* actual);
  // `bytes` receives the size of the case's buffers (inputs and both output sets).
  bool check_case(const Shape& shape, int seed, std::vector<OutputStats>* stats, double* bytes);
  bool benchmark_shape(const Shape& shape);
  // One call as the benchmark times it, the same for the candidate's loop and the judge's "time"
  // requests: poison (variant by call parity), new input values (when `undo` is given; what was
  // drawn goes to *perturb), a cache flush (or a synchronise), the call.
  CallOutcome timed_call(CaseState& cs, Impl impl, int call, bool flush, PerturbUndo* undo,
                         std::vector<Perturbation>* perturb);

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

  std::vector<Shape> hidden_;
  JudgeCache* cache_ = nullptr;
  Pacer* pacer_ = nullptr;
  CaseCache* case_cache_ = nullptr;
  // A benchmark case of `shape` and `seed`, set up (or kept by a --sweep); null when setup failed.
  std::unique_ptr<CaseState> take_case(const Shape& shape, int seed);
  void keep_case(std::unique_ptr<CaseState> cs);
  // Before each batch of a paced benchmark, on both sides (the candidate's child and the judge
  // timing the reference): the case's inputs and test outputs moved to new places on the device,
  // where the device says placement moves a kernel's time (Device::placement_varies). True when
  // they moved.
  bool move_buffers(CaseState& cs);
  bool move_note_said_ = false;
  std::unique_ptr<DumpWriter> dump_;
  std::mt19937_64 rng_{std::random_device{}()};
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
    double dump = 0;  // the split judge's candidate child: outputs written for the checker
  } times_;
  // And the benchmark phase's ("benchmark.<step>"): inputs, the perturbation before each timed
  // call, the calls with their flushes, and what follows the timing loop.
  struct BenchTimes {
    double setup = 0, perturb = 0, calls = 0, after = 0;
  } bench_times_;
};

}  // namespace kernelfoundry
