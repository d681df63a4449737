// Starting and stopping the scripted loopback LLM server for tests.
#include "llm_server/llm_server_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

#include "util/fs.h"
#include "util/strings.h"

extern char** environ;

namespace kf {

namespace {

std::filesystem::path server_script() {
  const char* source = std::getenv("KF_SOURCE_DIR");
  if (source != nullptr && *source != '\0')
    return std::filesystem::path(source) / "tests" / "llm_server" / "kf_llm_server.py";
#ifdef KF_LLM_SERVER_SCRIPT
  return KF_LLM_SERVER_SCRIPT;
#else
  return "tests/llm_server/kf_llm_server.py";
#endif
}

// Waits up to `timeout_s` for `pid` to exit; true when it did (and was reaped).
bool wait_exit(pid_t pid, double timeout_s) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid || r < 0) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

Result<std::unique_ptr<LlmTestServer>> LlmTestServer::start(const nlohmann::json& script,
                                                            const std::filesystem::path& work_dir) {
  KF_RETURN_IF_ERROR(make_dirs(work_dir));
  KF_RETURN_IF_ERROR(write_file(work_dir / "script.json", script.dump(2)));
  return start(work_dir / "script.json", work_dir);
}

Result<std::unique_ptr<LlmTestServer>> LlmTestServer::start(
    const std::filesystem::path& script_json, const std::filesystem::path& work_dir) {
  using R = Result<std::unique_ptr<LlmTestServer>>;
  KF_RETURN_IF_ERROR(make_dirs(work_dir));
  const std::filesystem::path script = server_script();
  if (!std::filesystem::exists(script))
    return R::error("LLM test server not found at " + script.string() + " (set KF_SOURCE_DIR)");
  const std::filesystem::path port_file = work_dir / "port";
  const std::filesystem::path log_file = work_dir / "requests.jsonl";
  const std::filesystem::path err_file = work_dir / "server.stderr";
  std::error_code ec;
  std::filesystem::remove(port_file, ec);

  std::vector<std::string> args = {"python3",     script.string(),
                                   "--script",    script_json.string(),
                                   "--port-file", port_file.string(),
                                   "--log",       log_file.string(),
                                   "--port",      "0"};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, "python3", &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return R::error(std::string("cannot start python3: ") + std::strerror(rc));

  std::unique_ptr<LlmTestServer> server(new LlmTestServer(pid, 0, work_dir));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto text = read_file(port_file);
    if (text && !trim(*text).empty()) {
      server->port_ = std::atoi(trim(*text).c_str());
      if (server->port_ > 0) return R(std::move(server));
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      server->pid_ = -1;  // already reaped
      return R::error("the LLM test server exited at start: " + server->stderr_text());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return R::error("the LLM test server did not write its port within 10 s: " +
                  server->stderr_text());
}

LlmTestServer::~LlmTestServer() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  if (!wait_exit(pid_, 3.0)) {
    ::kill(pid_, SIGKILL);
    wait_exit(pid_, 3.0);
  }
}

std::string LlmTestServer::base_url_openai() const {
  return "http://127.0.0.1:" + std::to_string(port_) + "/v1";
}

std::string LlmTestServer::base_url_anthropic() const {
  return "http://127.0.0.1:" + std::to_string(port_);
}

std::vector<nlohmann::json> LlmTestServer::log_lines() const {
  std::vector<nlohmann::json> lines;
  std::ifstream in(work_dir_ / "requests.jsonl");
  std::string line;
  while (std::getline(in, line)) {
    nlohmann::json parsed = nlohmann::json::parse(line, nullptr, false);
    if (!parsed.is_discarded()) lines.push_back(std::move(parsed));
  }
  return lines;
}

std::string LlmTestServer::stderr_text() const {
  auto text = read_file(work_dir_ / "server.stderr");
  return text ? *text : std::string();
}

}  // namespace kf
