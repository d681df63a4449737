// The paced benchmark's protocol, candidate child side (see pace.h).
#include "harness/pace.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sstream>

namespace kernelfoundry {

PaceCommand parse_pace_command(const std::string& line) {
  PaceCommand c;
  if (line == "next") {
    c.kind = PaceCommand::Kind::Next;
    return c;
  }
  if (line.compare(0, 6, "abort ") == 0) {
    c.error = "the evaluator ended the paced benchmark: " + line.substr(6, 200);
    return c;
  }
  long calls = 0;
  char extra = 0;
  if (std::sscanf(line.c_str(), "go %ld%c", &calls, &extra) == 1 && calls >= 1 && calls <= 100000) {
    c.kind = PaceCommand::Kind::Go;
    c.calls = calls;
    return c;
  }
  c.error =
      "the evaluator's pacing answer '" + line.substr(0, 80) + "' is neither 'go K' nor 'next'";
  return c;
}

std::string pace_line(const std::string& nonce, const std::string& shape, long batch,
                      double estimate_ms, const std::vector<double>& samples_ms) {
  std::ostringstream out;
  out.precision(9);
  out << "kf-pace " << nonce << ' ' << shape << ' ' << batch << ' ' << estimate_ms;
  for (double ms : samples_ms) out << ' ' << ms;
  return out.str();
}

Pacer::Pacer(std::string in_path, std::string out_path)
    : in_path_(std::move(in_path)), out_path_(std::move(out_path)) {}

Pacer::~Pacer() {
  if (in_ != nullptr) std::fclose(in_);
  if (out_ != nullptr) std::fclose(out_);
}

bool Pacer::open(std::string* err) {
  if (in_ != nullptr) return true;
  // The evaluator opens its ends (reading pace-out, writing pace-in) when it starts pacing: each
  // open here blocks until then. Same order on both sides, so neither waits on the other.
  out_ = std::fopen(out_path_.c_str(), "we");
  if (out_ == nullptr) {
    *err = "cannot open the pacing channel " + out_path_ + ": " + std::strerror(errno);
    return false;
  }
  in_ = std::fopen(in_path_.c_str(), "re");
  if (in_ == nullptr) {
    *err = "cannot open the pacing channel " + in_path_ + ": " + std::strerror(errno);
    return false;
  }
  std::string first;
  if (!read_line(&first, err)) return false;
  if (first.compare(0, 6, "nonce ") != 0 || first.size() < 14) {
    *err = "the pacing channel did not start with the evaluator's nonce";
    return false;
  }
  nonce_ = first.substr(6);
  return true;
}

bool Pacer::say(const std::string& line, std::string* err) {
  if (std::fputs(line.c_str(), out_) < 0 || std::fputc('\n', out_) == EOF ||
      std::fflush(out_) != 0) {
    *err = "the evaluator stopped reading the pacing channel";
    return false;
  }
  return true;
}

bool Pacer::read_line(std::string* line, std::string* err) {
  line->clear();
  int c;
  while ((c = std::fgetc(in_)) != EOF && c != '\n') {
    if (line->size() >= 256) {
      *err = "the evaluator's pacing answer is too long";
      return false;
    }
    line->push_back(char(c));
  }
  if (c == EOF) {
    *err = "the evaluator closed the pacing channel";
    return false;
  }
  return true;
}

PaceCommand Pacer::boundary(const std::string& shape, long batch, double estimate_ms,
                            const std::vector<double>& samples_ms) {
  PaceCommand c;
  std::string line;
  if (!open(&c.error) || !say(pace_line(nonce_, shape, batch, estimate_ms, samples_ms), &c.error) ||
      !read_line(&line, &c.error))
    return c;
  return parse_pace_command(line);
}

void Pacer::done() {
  if (out_ == nullptr || nonce_.empty()) return;
  std::string err;
  say("kf-pace " + nonce_ + " done", &err);
}

}  // namespace kernelfoundry
