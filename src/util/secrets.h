// Secrets (API keys, values of .env): a process-wide set of values that never reach a message,
// a log, a stored row or a file the run writes; redact_secrets() replaces each with its name.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kf {

// Values shorter than this are not secrets: a .env may hold DEBUG=1, and redacting "1" would
// destroy every text.
constexpr size_t kMinSecretChars = 8;

// The KEY=value lines of a .env file in order (`export KEY=value`, single or double quotes,
// `# comments`); empty when the file is missing or unreadable.
std::vector<std::pair<std::string, std::string>> read_dotenv(const std::filesystem::path& file);
// The value of `name` in a .env file (the last line wins, as in a shell); "" when absent.
std::string dotenv_value(const std::filesystem::path& file, const std::string& name);

// From now on redact_secrets replaces `value` with "[redacted NAME]" (value trimmed; ignored
// when shorter than kMinSecretChars). Thread-safe.
void register_secret(std::string_view name, std::string_view value);
// Registers every value of <dir>/.env, and the value of each named variable from the environment
// (else from <dir>/.env). `dir` "" = the current directory.
void register_env_secrets(const std::vector<std::string>& variables,
                          const std::filesystem::path& dir = {});
// `text` with every registered value replaced (longest first); `text` itself when none is in it.
std::string redact_secrets(std::string_view text);
// Whether `text` holds a registered value.
bool contains_secret(std::string_view text);
// How long a suffix of `text` is a proper prefix of some registered value (0 = none): a stream
// that flushes partial lines holds that much back until it knows more.
size_t secret_prefix_suffix(std::string_view text);
// Forgets every registered value (tests).
void clear_secrets();

}  // namespace kf
