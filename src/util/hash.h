// Content hashes (SHA-256, hex) for task identity and the build cache.
#pragma once

#include <string>
#include <string_view>

namespace kf {

std::string sha256_hex(std::string_view data);

// Accumulates several named parts into one digest (order matters).
class Hasher {
 public:
  Hasher();
  ~Hasher();
  Hasher(const Hasher&) = delete;
  Hasher& operator=(const Hasher&) = delete;
  Hasher& add(std::string_view part);
  std::string hex();

 private:
  void* ctx_;
};

}  // namespace kf
