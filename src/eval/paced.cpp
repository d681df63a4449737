// The paced benchmark, evaluator side (see paced.h).
#include "eval/paced.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "proc/pause_group.h"
#include "util/pressure.h"
#include "util/strings.h"

namespace kf {
namespace fs = std::filesystem;
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

bool parse_double(const std::string& text, double* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno != 0 || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

// The machine's CPU stall time so far (microseconds) and when it was read; total < 0 when the
// kernel keeps no pressure accounting (before Linux 4.20, or psi=0).
struct PressureMark {
  double total_us = -1;
  Clock::time_point at = Clock::now();
};

PressureMark read_cpu_pressure() {
  PressureMark mark;
  mark.total_us = read_cpu_pressure_total_us();
  return mark;
}

}  // namespace

bool parse_pace_boundary(const std::string& line, const std::string& nonce, PaceBoundary* out) {
  std::istringstream in(line);
  std::vector<std::string> w;
  for (std::string word; in >> word;) w.push_back(word);
  if (w.size() < 3 || w[0] != "kf-pace" || w[1] != nonce) return false;
  *out = PaceBoundary{};
  if (w.size() == 3) {
    out->done = w[2] == "done";
    return out->done;
  }
  if (w.size() < 5) return false;
  out->shape = w[2];
  char* end = nullptr;
  out->batch = std::strtol(w[3].c_str(), &end, 10);
  if (end == w[3].c_str() || *end != '\0' || out->batch < 0) return false;
  if (!parse_double(w[4], &out->estimate_ms)) return false;
  for (std::size_t i = 5; i < w.size(); ++i) {
    double ms = 0;
    if (!parse_double(w[i], &ms)) return false;
    out->samples_ms.push_back(ms);
  }
  return true;
}

std::string compare_reported_samples(const std::vector<ShapePairs>& pairs,
                                     const std::map<std::string, std::vector<double>>& reported) {
  for (const ShapePairs& s : pairs) {
    std::vector<double> said;
    for (const BatchPair& b : s.batches)
      said.insert(said.end(), b.candidate_ms.begin(), b.candidate_ms.end());
    auto it = reported.find(s.shape);
    if (it == reported.end()) return "shape " + s.shape + " is missing from the result file";
    if (it->second.size() != said.size())
      return strprintf("shape %s: the result file has %zu samples, the batches said %zu",
                       s.shape.c_str(), it->second.size(), said.size());
    for (std::size_t i = 0; i < said.size(); ++i) {
      if (std::fabs(it->second[i] - said[i]) > 1e-7 * std::fabs(said[i]) + 1e-9)
        return strprintf("shape %s sample %zu: the result file says %.9g ms, the batch said %.9g",
                         s.shape.c_str(), i, it->second[i], said[i]);
    }
  }
  return "";
}

Result<std::unique_ptr<PacedTiming>> PacedTiming::start(const fs::path& dir, Options options,
                                                        TimeReference time_reference) {
  using R = Result<std::unique_ptr<PacedTiming>>;
  fs::path in_path = dir / "pace.in", out_path = dir / "pace.out";
  for (const fs::path& p : {in_path, out_path}) {
    std::error_code ec;
    fs::remove(p, ec);
    if (::mkfifo(p.c_str(), 0600) != 0)
      return R::error("cannot make the pacing FIFO " + p.string() + ": " + std::strerror(errno));
  }
  // Both opened now, so the child's opens never block: ours of pace.in reads and writes (a FIFO
  // opened O_RDWR has a reader and a writer at once), ours of pace.out reads without blocking.
  int in_fd = ::open(in_path.c_str(), O_RDWR | O_CLOEXEC);
  int out_fd = ::open(out_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (in_fd < 0 || out_fd < 0) {
    std::string why = std::strerror(errno);
    if (in_fd >= 0) ::close(in_fd);
    if (out_fd >= 0) ::close(out_fd);
    return R::error("cannot open the pacing FIFOs in " + dir.string() + ": " + why);
  }
  std::unique_ptr<PacedTiming> p(
      new PacedTiming(in_path, out_path, in_fd, out_fd, options, std::move(time_reference)));
  p->thread_ = std::thread([raw = p.get()] { raw->run(); });
  return R(std::move(p));
}

PacedTiming::PacedTiming(fs::path in_path, fs::path out_path, int in_fd, int out_fd,
                         Options options, TimeReference time_reference)
    : in_path_(std::move(in_path)),
      out_path_(std::move(out_path)),
      in_fd_(in_fd),
      out_fd_(out_fd),
      options_(options),
      time_reference_(std::move(time_reference)) {
  std::random_device entropy;
  nonce_ = strprintf("%08x%08x", entropy(), entropy());
}

PacedTiming::~PacedTiming() {
  finish();
  if (in_fd_ >= 0) ::close(in_fd_);
  if (out_fd_ >= 0) ::close(out_fd_);
}

std::vector<std::string> PacedTiming::harness_args() const {
  return {"--pace-in", in_path_.string(), "--pace-out", out_path_.string()};
}

void PacedTiming::finish() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

bool PacedTiming::read_line(std::string* line) {
  auto start = Clock::now();
  while (true) {
    std::size_t nl = buffered_.find('\n');
    if (nl != std::string::npos) {
      *line = buffered_.substr(0, nl);
      buffered_.erase(0, nl + 1);
      return true;
    }
    if (buffered_.size() > 1 << 20) {
      abort("a pacing line longer than 1 MiB");
      return false;
    }
    if (seconds_since(start) > options_.answer_timeout_s) return false;
    // Once finish() is called the child has ended: what it wrote is still read (its last line
    // is often "done"), but nothing more is waited for.
    bool stopping = stop_;
    pollfd p{out_fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, stopping ? 0 : 50);
    if (ready < 0 && errno != EINTR) return false;
    if (ready <= 0) {
      if (stopping) return false;
      continue;
    }
    char buf[65536];
    ssize_t n = ::read(out_fd_, buf, sizeof buf);
    if (n > 0) {
      buffered_.append(buf, std::size_t(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    // End of file: the child closed its end (it ended). Before it opened it, poll reports
    // nothing (POLLHUP only once a writer came and went), so this is never "not yet".
    return false;
  }
}

bool PacedTiming::send(const std::string& line) {
  std::string text = line + "\n";
  std::size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(in_fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += std::size_t(n);
  }
  return true;
}

void PacedTiming::abort(const std::string& why) {
  if (problem_.empty()) problem_ = why;
  send("abort " + why);
}

void PacedTiming::run() {
  if (!send("nonce " + nonce_)) {
    problem_ = "cannot write to the pacing FIFO";
    return;
  }
  bool reference_ok = true;
  bool shapes_ok = true;
  Clock::time_point shape_start, go_at;
  // Calls per batch: from the warm-up's device-time estimate at a shape's start (max_calls),
  // then, pair by pair, as many as fit the wall-time target at the last candidate batch's wall
  // time per call (a cache flush before a cold call can cost far more than the call itself).
  long calls = 1, max_calls = 1;
  // Times the reference for pair `p` of the current shape; false (and the rest of the job's
  // batches end early) when the judge cannot.
  auto time_reference = [&](std::size_t p) {
    if (!reference_ok) return false;
    auto samples = time_reference_(pairs_.back().shape, calls);
    if (!samples) {
      reference_ok = false;
      if (problem_.empty())
        problem_ = "the reference could not be timed next to the candidate: " + samples.message();
      return false;
    }
    pairs_.back().batches[p].reference_ms = std::move(*samples);
    return true;
  };
  // Starts pair `p`: ABBA order, even pairs candidate first, odd pairs reference first.
  auto start_pair = [&](std::size_t p, double last_wall_ms) {
    if (last_wall_ms > 0) {
      double per_call = last_wall_ms / double(calls);
      calls = std::clamp(long(options_.batch_wall_ms / std::max(per_call, 1e-3)), 1L, max_calls);
    }
    pairs_.back().batches.emplace_back();
    pairs_.back().batches.back().probe = p == 0;
    if (p % 2 == 1 && !time_reference(p)) return send("next");
    go_at = Clock::now();
    return send("go " + std::to_string(calls));
  };
  // The job's builds stop from the first batch to the end of the benchmark (nothing of the job
  // competes with either side's timing; on a CPU target that is most of what keeps them fair).
  std::unique_ptr<PauseGroup::Hold> hold;
  // How much of the benchmark some task waited for a CPU: said with the result, because a
  // contended machine makes both sides' calls wait for the scheduler (see cpu_pressure()).
  PressureMark pressure_start;
  std::string line;
  while (read_line(&line)) {
    if (!hold) {
      hold = std::make_unique<PauseGroup::Hold>(options_.pause);
      pressure_start = read_cpu_pressure();
    }
    PaceBoundary b;
    if (!parse_pace_boundary(line, nonce_, &b)) {
      abort("the candidate's run wrote a line that is not a pacing boundary");
      return;
    }
    if (b.done) {
      complete_ = shapes_ok && reference_ok && !pairs_.empty();
      PressureMark end = read_cpu_pressure();
      double wall_us =
          std::chrono::duration<double, std::micro>(end.at - pressure_start.at).count();
      if (pressure_start.total_us >= 0 && end.total_us >= pressure_start.total_us && wall_us > 0)
        cpu_pressure_ = std::min(1.0, (end.total_us - pressure_start.total_us) / wall_us);
      return;
    }
    if (b.batch == 0) {
      if (!b.samples_ms.empty()) {
        abort("a shape's first boundary carried samples");
        return;
      }
      pairs_.push_back(ShapePairs{b.shape, {}});
      double estimate = std::max(b.estimate_ms, 1e-4);
      max_calls = std::clamp(long(std::ceil(options_.batch_target_ms / estimate)), 1L,
                             options_.max_batch_calls);
      // The first pair is short: it measures what a call costs in wall time (the warm-up's
      // calls had no cache flush), which sizes the pairs after it.
      calls = std::min(max_calls, 2L);
      shape_start = Clock::now();
      if (!start_pair(0, 0)) return;
      continue;
    }
    if (pairs_.empty() || b.shape != pairs_.back().shape ||
        std::size_t(b.batch) != pairs_.back().batches.size() ||
        long(b.samples_ms.size()) != calls) {
      abort("a pacing boundary out of turn (shape " + b.shape + ", batch " +
            std::to_string(b.batch) + ")");
      return;
    }
    // The batch's claimed device time cannot exceed the wall time around it.
    double wall_ms = seconds_since(go_at) * 1e3, claimed = 0;
    for (double ms : b.samples_ms) claimed += ms;
    if (claimed > wall_ms * 1.02 + 0.5) {
      suspicions_.push_back(
          strprintf("shape %s batch %ld: %ld samples sum to %.3f ms, but the "
                    "batch took %.3f ms of wall time",
                    b.shape.c_str(), b.batch, calls, claimed, wall_ms));
    }
    std::size_t p = std::size_t(b.batch - 1);
    pairs_.back().batches[p].candidate_ms = b.samples_ms;
    if (p % 2 == 0 && !time_reference(p)) {
      pairs_.back().batches[p].reference_ms.clear();
      shapes_ok = false;
      if (!send("next")) return;
      continue;
    }
    // Three pairs at least after the probe, whatever the budget: one says nothing about the
    // spread, and two give an interval too wide (t = 12.7 at one degree of freedom) to call
    // anything faster.
    int n = int(pairs_.back().batches.size());
    bool enough =
        n >= 4 &&
        (pairs_converged(pairs_.back().batches, options_.rel_halfwidth, options_.min_pairs) ||
         n >= options_.max_pairs || seconds_since(shape_start) > options_.shape_budget_s);
    if (enough) {
      if (!send("next")) return;
      continue;
    }
    if (!start_pair(p + 1, wall_ms)) return;
  }
}

}  // namespace kf
