// API keys: the server's environment variable, else a KEY=value line of a .env file. Messages
// name the variable and the file, never a value read from either.
#include <cstdlib>
#include <fstream>

#include "infer/infer.h"
#include "util/strings.h"

namespace kf {

namespace {

// The value of `name` in a .env file (`KEY=value`, `export KEY=value`, single or double quotes,
// `# comments`), or "" when the file or the line is missing.
std::string dotenv_value(const std::filesystem::path& file, const std::string& name) {
  std::ifstream in(file);
  if (!in) return "";
  std::string line, found;
  while (std::getline(in, line)) {
    std::string entry = trim(line);
    if (entry.empty() || entry[0] == '#') continue;
    if (starts_with(entry, "export ")) entry = trim(entry.substr(7));
    size_t eq = entry.find('=');
    if (eq == std::string::npos || trim(entry.substr(0, eq)) != name) continue;
    std::string value = trim(entry.substr(eq + 1));
    if (!value.empty() && (value[0] == '"' || value[0] == '\'')) {
      size_t close = value.find(value[0], 1);
      value = close == std::string::npos ? value.substr(1) : value.substr(1, close - 1);
    } else if (size_t hash = value.find(" #"); hash != std::string::npos) {
      value = trim(value.substr(0, hash));
    }
    found = value;  // the last line wins, as in a shell
  }
  return found;
}

}  // namespace

Result<std::string> find_api_key(const ServerConfig& server,
                                 const std::filesystem::path& dotenv_dir) {
  std::string variable = server.key_env();
  if (variable.empty()) return std::string();  // replay: no key
  // The provider's default key is for the provider's own API: a custom base_url (a local server,
  // a proxy, another vendor) gets a key only from a variable named with api_key_env.
  if (!server.base_url.empty() && server.api_key_env.empty()) return std::string();
  const char* from_env = std::getenv(variable.c_str());
  if (from_env != nullptr && *from_env != '\0') return trim(from_env);

  std::filesystem::path dotenv =
      (dotenv_dir.empty() ? std::filesystem::path(".") : dotenv_dir) / ".env";
  std::string from_file = dotenv_value(dotenv, variable);
  if (!from_file.empty()) return from_file;

  // A local server (vLLM, Ollama, ...) usually needs no key.
  if (!server.base_url.empty()) return std::string();

  std::error_code ec;
  std::filesystem::path shown = std::filesystem::absolute(dotenv, ec);
  if (ec) shown = dotenv;
  std::string where =
      server.where.empty() ? server.label() : server.where + " (" + server.label() + ")";
  return Result<std::string>::error(
      where + ": no API key: the environment variable " + variable +
      " is not set. Set it (export " + variable + "=...) or add a line " + variable + "=... to " +
      shown.string() +
      (server.api_key_env.empty() ? "; or name another variable with api_key_env" : ""));
}

}  // namespace kf
