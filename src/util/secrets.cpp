// The process-wide secret set and its redaction; the .env reader shared with the key lookup.
#include "util/secrets.h"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <shared_mutex>

#include "util/strings.h"

namespace kf {

namespace {

struct Secret {
  std::string value, replacement;
};

// Registration happens a few times at start; redaction on every stored row and output line, from
// any thread: readers share the lock.
struct SecretSet {
  std::shared_mutex mutex;
  std::vector<Secret> secrets;  // longest value first, so a value inside another is not split
};

SecretSet& secret_set() {
  static SecretSet* set = new SecretSet();  // never destroyed: output is redacted up to exit
  return *set;
}

std::string unquote(std::string value) {
  if (!value.empty() && (value[0] == '"' || value[0] == '\'')) {
    size_t close = value.find(value[0], 1);
    return close == std::string::npos ? value.substr(1) : value.substr(1, close - 1);
  }
  if (size_t hash = value.find(" #"); hash != std::string::npos) return trim(value.substr(0, hash));
  return value;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> read_dotenv(const std::filesystem::path& file) {
  std::vector<std::pair<std::string, std::string>> entries;
  std::ifstream in(file);
  if (!in) return entries;
  std::string line;
  while (std::getline(in, line)) {
    std::string entry = trim(line);
    if (entry.empty() || entry[0] == '#') continue;
    if (starts_with(entry, "export ")) entry = trim(entry.substr(7));
    size_t eq = entry.find('=');
    if (eq == std::string::npos) continue;
    std::string name = trim(entry.substr(0, eq));
    if (name.empty()) continue;
    entries.emplace_back(std::move(name), unquote(trim(entry.substr(eq + 1))));
  }
  return entries;
}

std::string dotenv_value(const std::filesystem::path& file, const std::string& name) {
  std::string found;
  for (const auto& [key, value] : read_dotenv(file))
    if (key == name) found = value;  // the last line wins, as in a shell
  return found;
}

void register_secret(std::string_view name, std::string_view value) {
  std::string text = trim(value);
  if (text.size() < kMinSecretChars) return;
  SecretSet& set = secret_set();
  std::unique_lock lock(set.mutex);
  for (const Secret& s : set.secrets)
    if (s.value == text) return;  // the first name given keeps it
  set.secrets.push_back({text, "[redacted " + std::string(name) + "]"});
  std::stable_sort(set.secrets.begin(), set.secrets.end(), [](const Secret& a, const Secret& b) {
    return a.value.size() > b.value.size();
  });
}

void register_env_secrets(const std::vector<std::string>& variables,
                          const std::filesystem::path& dir) {
  std::filesystem::path dotenv = (dir.empty() ? std::filesystem::path(".") : dir) / ".env";
  auto entries = read_dotenv(dotenv);
  for (const std::string& name : variables) {
    if (name.empty()) continue;
    const char* from_env = std::getenv(name.c_str());
    if (from_env != nullptr && *from_env != '\0') register_secret(name, from_env);
  }
  for (const auto& [name, value] : entries) register_secret(name, value);
}

std::string redact_secrets(std::string_view text) {
  SecretSet& set = secret_set();
  std::shared_lock lock(set.mutex);
  if (set.secrets.empty() || text.size() < kMinSecretChars) return std::string(text);
  std::string out(text);
  for (const Secret& s : set.secrets)
    if (out.find(s.value) != std::string::npos)
      out = replace_all(std::move(out), s.value, s.replacement);
  return out;
}

bool contains_secret(std::string_view text) {
  SecretSet& set = secret_set();
  std::shared_lock lock(set.mutex);
  for (const Secret& s : set.secrets)
    if (text.find(s.value) != std::string_view::npos) return true;
  return false;
}

size_t secret_prefix_suffix(std::string_view text) {
  SecretSet& set = secret_set();
  std::shared_lock lock(set.mutex);
  size_t longest = 0;
  for (const Secret& s : set.secrets) {
    size_t most = std::min(text.size(), s.value.size() - 1);
    for (size_t n = most; n > longest; --n) {
      if (text.substr(text.size() - n) == std::string_view(s.value).substr(0, n)) {
        longest = n;
        break;
      }
    }
  }
  return longest;
}

void clear_secrets() {
  SecretSet& set = secret_set();
  std::unique_lock lock(set.mutex);
  set.secrets.clear();
}

}  // namespace kf
