// Content hashes (SHA-256, hex) for task identity and the build cache.
#include "util/hash.h"

#include <openssl/evp.h>

#include <cstdint>

namespace kf {

Hasher::Hasher() : ctx_(EVP_MD_CTX_new()) {
  EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr);
}

Hasher::~Hasher() {
  EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_));
}

Hasher& Hasher::add(std::string_view part) {
  // Length-prefix each part so ("ab","c") and ("a","bc") differ.
  uint64_t n = part.size();
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), &n, sizeof n);
  EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), part.data(), part.size());
  return *this;
}

std::string Hasher::hex() {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), digest, &len);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < len; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 15];
  }
  return out;
}

}  // namespace kf
