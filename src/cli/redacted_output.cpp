// A streambuf that redacts secrets line by line before they reach the real stdout / stderr.
#include "cli/redacted_output.h"

#include <iostream>
#include <mutex>
#include <streambuf>
#include <string>
#include <vector>

#include "util/secrets.h"

namespace kf {

namespace {

class RedactingBuf : public std::streambuf {
 public:
  explicit RedactingBuf(std::streambuf* sink) : sink_(sink) {}

  // Everything still held, then the sink flushed.
  void finish() {
    std::lock_guard<std::mutex> lock(mutex_);
    emit(pending_.size());
    sink_->pubsync();
  }

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    char c = traits_type::to_char_type(ch);
    xsputn(&c, 1);
    return ch;
  }

  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.append(s, static_cast<size_t>(n));
    // Whole lines go out now: a secret never spans a newline.
    size_t newline = pending_.rfind('\n');
    if (newline != std::string::npos) {
      emit(newline + 1);
      sink_->pubsync();
    }
    return n;
  }

  int sync() override {
    std::lock_guard<std::mutex> lock(mutex_);
    // A partial line ("reference: building ..." then a flush) goes out, but not a tail that may
    // be the start of a secret whose rest comes with the next write.
    emit(pending_.size() - secret_prefix_suffix(pending_));
    return sink_->pubsync();
  }

 private:
  void emit(size_t n) {
    if (n == 0) return;
    std::string out = redact_secrets(std::string_view(pending_).substr(0, n));
    sink_->sputn(out.data(), static_cast<std::streamsize>(out.size()));
    pending_.erase(0, n);
  }

  std::streambuf* sink_;
  std::mutex mutex_;  // the job's threads share std::cout
  std::string pending_;
};

}  // namespace

struct RedactedStdStreams::Impl {
  struct Installed {
    std::ostream* stream;
    std::streambuf* original;
    std::unique_ptr<RedactingBuf> buf;
  };
  std::vector<Installed> installed;
};

RedactedStdStreams::RedactedStdStreams() : impl_(std::make_unique<Impl>()) {
  for (std::ostream* stream : {&std::cout, &std::cerr, &std::clog}) {
    auto buf = std::make_unique<RedactingBuf>(stream->rdbuf());
    std::streambuf* original = stream->rdbuf(buf.get());
    impl_->installed.push_back({stream, original, std::move(buf)});
  }
}

RedactedStdStreams::~RedactedStdStreams() {
  for (auto& entry : impl_->installed) {
    entry.stream->flush();
    entry.buf->finish();
    entry.stream->rdbuf(entry.original);
  }
}

}  // namespace kf
