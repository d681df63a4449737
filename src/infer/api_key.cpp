// API keys: the server's environment variable, else a KEY=value line of a .env file. Messages
// name the variable and the file, never a value read from either.
#include <cstdlib>

#include "infer/infer.h"
#include "util/secrets.h"
#include "util/strings.h"

namespace kf {

Result<std::string> find_api_key(const ServerConfig& server,
                                 const std::filesystem::path& dotenv_dir) {
  std::string variable = server.key_env();
  if (variable.empty()) return std::string();  // replay: no key
  // The provider's default key is for the provider's own API: a custom base_url (a local server,
  // a proxy, another vendor) gets a key only from a variable named with api_key_env. The config
  // leaves api_key_env null there unless the user set it (config/api_keys.h).
  if (!server.base_url.empty() && server.api_key_env.empty()) return std::string();
  // A key in use is a secret from here on, whatever else registered it.
  const char* from_env = std::getenv(variable.c_str());
  if (from_env != nullptr && *from_env != '\0') {
    register_secret(variable, from_env);
    return trim(from_env);
  }

  std::filesystem::path dotenv =
      (dotenv_dir.empty() ? std::filesystem::path(".") : dotenv_dir) / ".env";
  std::string from_file = dotenv_value(dotenv, variable);
  if (!from_file.empty()) {
    register_secret(variable, from_file);
    return from_file;
  }

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
