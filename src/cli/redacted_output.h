// The CLI's standard streams with every registered secret (util/secrets.h) redacted: whatever a
// message, a progress line or a listing holds, no key or .env value reaches the terminal or a log.
#pragma once

#include <iosfwd>
#include <memory>

namespace kf {

// While alive, std::cout, std::cerr and std::clog write through a redacting buffer: complete
// lines are redacted and flushed to the real stream at once (a log file keeps every line even if
// the process dies); a partial line is written on flush, except a tail that may begin a secret.
// The destructor writes what is left and puts the original buffers back.
class RedactedStdStreams {
 public:
  RedactedStdStreams();
  ~RedactedStdStreams();
  RedactedStdStreams(const RedactedStdStreams&) = delete;
  RedactedStdStreams& operator=(const RedactedStdStreams&) = delete;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kf
