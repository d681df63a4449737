// The paced benchmark (the candidate child's side): the evaluator decides, batch by batch, when
// the candidate's timed calls run, so that each batch has a batch of the reference's, timed by
// the job's judge, next to it in time (a speedup measured side by side, not against a reference
// timed minutes earlier under other load).
//
// Two FIFOs in the child's work directory, opened by the harness (--pace-in, --pace-out), so the
// protocol is not on stdout (the candidate's prints go there) and the candidate's code, which may
// not import file APIs, cannot speak it. The evaluator writes first: "nonce NONCE". Then, at every
// batch boundary, the harness says
//   kf-pace NONCE SHAPE_ID BATCH ESTIMATE_MS [SAMPLE_MS ...]
// (BATCH 0 after the warm-up, with its per-call estimate and no samples; later ones with the
// samples of the batch that just ran) and waits for "go K" (K timed calls), "next" (the
// shape is done) or "abort REASON" (the run fails with it). After the last shape:
// "kf-pace NONCE done".
#pragma once

#include <cstdio>
#include <string>
#include <vector>

namespace kernelfoundry {

struct PaceCommand {
  enum class Kind { Go, Next, Error } kind = Kind::Error;
  long calls = 0;     // Go: how many timed calls
  std::string error;  // Error: what went wrong (the evaluator stopped answering, a bad line)
};

// Parses one line from the evaluator ("go K" with 1 <= K <= 100000, "next", "abort REASON").
PaceCommand parse_pace_command(const std::string& line);
// The harness's line at a batch boundary (without the newline).
std::string pace_line(const std::string& nonce, const std::string& shape, long batch,
                      double estimate_ms, const std::vector<double>& samples_ms);

class Pacer {
 public:
  Pacer(std::string in_path, std::string out_path);
  ~Pacer();
  Pacer(const Pacer&) = delete;
  Pacer& operator=(const Pacer&) = delete;

  // At a batch boundary of `shape`: says where it stands and waits for the evaluator's answer.
  // Opens the FIFOs and reads the nonce on first use.
  PaceCommand boundary(const std::string& shape, long batch, double estimate_ms,
                       const std::vector<double>& samples_ms);
  // After the last shape (no answer expected). Does nothing when the FIFOs were never opened.
  void done();

 private:
  bool open(std::string* err);
  bool say(const std::string& line, std::string* err);
  bool read_line(std::string* line, std::string* err);

  std::string in_path_, out_path_, nonce_;
  std::FILE* in_ = nullptr;
  std::FILE* out_ = nullptr;
};

}  // namespace kernelfoundry
