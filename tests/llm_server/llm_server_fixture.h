// Test fixture: runs tests/llm_server/kf_llm_server.py (a scripted OpenAI/Anthropic server on
// loopback) as a child process for the lifetime of one object.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "util/status.h"

namespace kf {

class LlmTestServer {
 public:
  // Starts `python3 kf_llm_server.py --script <script_json>` with its port file, log and stderr
  // in `work_dir` (created), and waits up to 10 s for it to listen. The script is found through
  // $KF_SOURCE_DIR (set by ctest), else the source path compiled in.
  static Result<std::unique_ptr<LlmTestServer>> start(const std::filesystem::path& script_json,
                                                      const std::filesystem::path& work_dir);
  // Writes `script` to <work_dir>/script.json, then start().
  static Result<std::unique_ptr<LlmTestServer>> start(const nlohmann::json& script,
                                                      const std::filesystem::path& work_dir);
  ~LlmTestServer();  // SIGTERM, waitpid (SIGKILL after 3 s)
  LlmTestServer(const LlmTestServer&) = delete;
  LlmTestServer& operator=(const LlmTestServer&) = delete;

  int port() const { return port_; }
  std::string base_url_openai() const;     // "http://127.0.0.1:<port>/v1"
  std::string base_url_anthropic() const;  // "http://127.0.0.1:<port>"
  // One JSON object per request served so far (the --log file): "call", "status", "fault", and
  // the key that came, as "auth_header" and "auth_sha256" (never the key itself).
  std::vector<nlohmann::json> log_lines() const;
  // The server's stderr so far (for failure messages).
  std::string stderr_text() const;

 private:
  LlmTestServer(pid_t pid, int port, std::filesystem::path work_dir)
      : pid_(pid), port_(port), work_dir_(std::move(work_dir)) {}

  pid_t pid_;
  int port_;
  std::filesystem::path work_dir_;
};

}  // namespace kf
