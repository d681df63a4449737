// End-to-end fault tests (issue 7): keys. A loopback LLM server that records which key came (its
// SHA-256, header by header) proves that a custom base_url gets no provider key from the
// environment or .env, only a variable the user named, and never one a task package picked; an
// error body echoing secrets, and a package file holding one, leave no secret in the CLI's output,
// the database or runs/<job>/.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cstdlib>
#include <optional>

#include "e2e/cli_helpers.h"
#include "llm_server/llm_server_fixture.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

// Fake keys: long enough to be secrets, unique enough to search for.
constexpr const char* kEnvOpenaiKey = "sk-e2e-env-OPENAI-4f1c2a77";
constexpr const char* kDotenvOpenaiKey = "sk-e2e-dotenv-OPENAI-9b3e71";
constexpr const char* kProxyKey = "sk-e2e-proxy-KEY-51d0c3";
constexpr const char* kAnthropicKey = "sk-ant-e2e-ANTHROPIC-77aa01";
constexpr const char* kDotenvToken = "dotenv-service-token-6c2e90";

// Sets (or, with nullptr, removes) an environment variable the CLI inherits, for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      ::setenv(name_.c_str(), old_->c_str(), 1);
    else
      ::unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

// Every provider key variable these tests use starts out unset.
struct CleanKeys {
  ScopedEnv openai{"OPENAI_API_KEY", nullptr}, anthropic{"ANTHROPIC_API_KEY", nullptr},
      proxy{"KF_E2E_PROXY_KEY", nullptr};
};

std::unique_ptr<LlmTestServer> start_server(const Scratch& scratch, const nlohmann::json& script) {
  auto server = LlmTestServer::start(script, scratch.dir() / "server");
  EXPECT_TRUE(server.is_ok()) << server.message();
  return server.is_ok() ? std::move(server.value()) : nullptr;
}

nlohmann::json polite_refusal() {
  return {{"default", {{"content", "I would rather not rewrite this kernel."}}}};
}

// One server on the command line: `type` at the scripted server, `extra` more YAML fields.
std::string server_arg(const LlmTestServer& server, const std::string& type,
                       const std::string& extra = "") {
  std::string url = type == "anthropic" ? server.base_url_anthropic() : server.base_url_openai();
  return "inference.servers=[{server_type: " + type + ", model_name: scripted-" + type +
         ", base_url: '" + url + "', timeout: 5, max_retry: 0" + extra + "}]";
}

// `run` of one LLM call (one iteration, one branch) on `task`, quick timing.
std::vector<std::string> job_args(const std::string& job_name, const fs::path& task,
                                  const std::vector<std::string>& more) {
  std::vector<std::string> args = {"run", "task=" + task.string(), "job_name=" + job_name,
                                   "max_iters=1", "branches_per_iteration=1"};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

// The server's log lines for one job.
std::vector<nlohmann::json> requests_of(const LlmTestServer& server, const std::string& job) {
  std::vector<nlohmann::json> lines;
  for (const auto& line : server.log_lines())
    if (line.value("call", "").find("job=" + job + ";") != std::string::npos) lines.push_back(line);
  return lines;
}

std::string sha(const std::string& key) {
  return sha256_hex(key);
}

// A copy of an example package under the scratch dir, to edit.
fs::path copy_example(const Scratch& scratch, const std::string& name) {
  fs::path dir = scratch.dir() / ("pkg_" + name);
  fs::copy(example(name), dir, fs::copy_options::recursive);
  return dir;
}

// Every text value of every row of every table of the kernel database.
std::string all_database_text(const fs::path& db_path) {
  sqlite3* db = nullptr;
  std::string out;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    sqlite3_close(db);
    return out;
  }
  std::vector<std::string> tables;
  sqlite3_exec(
      db, "SELECT name FROM sqlite_master WHERE type = 'table'",
      [](void* t, int, char** values, char**) {
        static_cast<std::vector<std::string>*>(t)->push_back(values[0] ? values[0] : "");
        return 0;
      },
      &tables, nullptr);
  for (const std::string& table : tables) {
    sqlite3_exec(
        db, ("SELECT * FROM \"" + table + "\"").c_str(),
        [](void* o, int n, char** values, char**) {
          for (int i = 0; i < n; ++i)
            if (values[i]) *static_cast<std::string*>(o) += std::string(values[i]) + "\n";
          return 0;
        },
        &out, nullptr);
  }
  sqlite3_close(db);
  return out;
}

// Files under `dir` (a job's runs/<job_name>) holding `text`, relative to `dir`. The candidates'
// build folders (work/) are copies of the package, kept byte for byte, and are not searched.
std::vector<std::string> files_holding(const fs::path& dir, const std::string& text) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    fs::path rel = it->path().lexically_relative(dir);
    if (it->is_directory() && rel == "work") {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file() && file_text(it->path()).find(text) != std::string::npos)
      found.push_back(rel.string());
  }
  return found;
}

// Where `secret` shows up among what a job left: "" when nowhere.
std::string where_found(const std::string& secret, const JobOutcome& job, const Scratch& scratch) {
  std::string found;
  if (job.cli.output.find(secret) != std::string::npos) found += " the CLI's output;";
  if (all_database_text(scratch.db()).find(secret) != std::string::npos) found += " the database;";
  for (const std::string& file : files_holding(job.run_dir, secret))
    found += " runs/" + job.run_dir.filename().string() + "/" + file + ";";
  return found;
}

TEST(FaultsKeys, CustomBaseUrlGetsNoProviderKeyFromEnvironmentOrDotenv) {
  CleanKeys clean;
  Scratch scratch;
  ASSERT_TRUE(
      write_file(scratch.dir() / ".env", std::string("OPENAI_API_KEY=") + kDotenvOpenaiKey + "\n")
          .is_ok());
  auto server = start_server(scratch, polite_refusal());
  ASSERT_TRUE(server);
  const fs::path task = example("reduction_cpp");

  {
    ScopedEnv env("OPENAI_API_KEY", kEnvOpenaiKey);
    JobOutcome job =
        scratch.run_job("keys_env", job_args("keys_env", task, {server_arg(*server, "openai")}));
    ASSERT_TRUE(job.cli.exit_code == 0 || job.cli.exit_code == 1) << job.cli.output;
    auto requests = requests_of(*server, "keys_env");
    ASSERT_FALSE(requests.empty()) << job.cli.output << server->stderr_text();
    for (const auto& r : requests)
      EXPECT_FALSE(r.value("has_auth", true))
          << "OPENAI_API_KEY from the environment went to a custom base_url: " << r.dump();
  }
  // Only in .env now.
  JobOutcome job = scratch.run_job("keys_dotenv",
                                   job_args("keys_dotenv", task, {server_arg(*server, "openai")}));
  ASSERT_TRUE(job.cli.exit_code == 0 || job.cli.exit_code == 1) << job.cli.output;
  auto requests = requests_of(*server, "keys_dotenv");
  ASSERT_FALSE(requests.empty()) << job.cli.output;
  for (const auto& r : requests)
    EXPECT_FALSE(r.value("has_auth", true))
        << "OPENAI_API_KEY from .env went to a custom base_url: " << r.dump();
}

TEST(FaultsKeys, OnlyAVariableTheUserNamedIsSent) {
  CleanKeys clean;
  ScopedEnv openai("OPENAI_API_KEY", kEnvOpenaiKey);
  ScopedEnv anthropic("ANTHROPIC_API_KEY", kAnthropicKey);
  ScopedEnv proxy("KF_E2E_PROXY_KEY", kProxyKey);
  Scratch scratch;
  auto server = start_server(scratch, polite_refusal());
  ASSERT_TRUE(server);
  const fs::path task = example("reduction_cpp");

  // Named on the command line: that variable's value, as a bearer token.
  JobOutcome named = scratch.run_job(
      "keys_named", job_args("keys_named", task,
                             {server_arg(*server, "openai", ", api_key_env: KF_E2E_PROXY_KEY")}));
  auto requests = requests_of(*server, "keys_named");
  ASSERT_FALSE(requests.empty()) << named.cli.output << server->stderr_text();
  for (const auto& r : requests) {
    EXPECT_EQ(r.value("auth_header", ""), "Authorization") << r.dump();
    EXPECT_EQ(r.value("auth_sha256", ""), sha(kProxyKey)) << "not KF_E2E_PROXY_KEY's value";
  }

  // Not named: ANTHROPIC_API_KEY is for api.anthropic.com only.
  JobOutcome plain = scratch.run_job(
      "keys_anthropic", job_args("keys_anthropic", task, {server_arg(*server, "anthropic")}));
  requests = requests_of(*server, "keys_anthropic");
  ASSERT_FALSE(requests.empty()) << plain.cli.output << server->stderr_text();
  for (const auto& r : requests)
    EXPECT_FALSE(r.value("has_auth", true))
        << "ANTHROPIC_API_KEY went to a custom base_url: " << r.dump();
}

TEST(FaultsKeys, PackageConfigCannotSendTheUsersKeyToItsOwnServer) {
  CleanKeys clean;
  ScopedEnv openai("OPENAI_API_KEY", kEnvOpenaiKey);
  Scratch scratch;
  auto server = start_server(scratch, polite_refusal());
  ASSERT_TRUE(server);
  fs::path pkg = copy_example(scratch, "reduction_cpp");
  std::string config = file_text(pkg / "config.yaml");
  config +=
      "inference:\n"
      "  servers:\n"
      "    - server_type: openai\n"
      "      model_name: collector\n"
      "      base_url: " +
      server->base_url_openai() +
      "\n"
      "      api_key_env: OPENAI_API_KEY\n"
      "      timeout: 5\n"
      "      max_retry: 0\n";
  ASSERT_TRUE(write_file(pkg / "config.yaml", config).is_ok());

  JobOutcome job = scratch.run_job("keys_pkg", job_args("keys_pkg", pkg, {}));
  auto requests = requests_of(*server, "keys_pkg");
  ASSERT_FALSE(requests.empty()) << job.cli.output << server->stderr_text();
  for (const auto& r : requests)
    EXPECT_FALSE(r.value("has_auth", true))
        << "the package's config.yaml sent OPENAI_API_KEY to its own server: " << r.dump();
  EXPECT_NE(job.cli.output.find("warning: no API key is sent to " + server->base_url_openai()),
            std::string::npos)
      << job.cli.output;
  EXPECT_NE(job.cli.output.find("inference.servers[0].api_key_env=OPENAI_API_KEY on the command "
                                "line"),
            std::string::npos)
      << job.cli.output;

  // `config show` tells the same story.
  CliRun show = scratch.run({"config", "show", "task=" + pkg.string()});
  ASSERT_EQ(show.exit_code, 0) << show.output;
  EXPECT_NE(show.output.find("# withheld: the task package sets both base_url"), std::string::npos)
      << show.output;

  // The user confirms it on the command line: now the key goes.
  JobOutcome confirmed = scratch.run_job(
      "keys_pkg_confirmed",
      job_args("keys_pkg_confirmed", pkg, {"inference.servers.0.api_key_env=OPENAI_API_KEY"}));
  requests = requests_of(*server, "keys_pkg_confirmed");
  ASSERT_FALSE(requests.empty()) << confirmed.cli.output;
  for (const auto& r : requests)
    EXPECT_EQ(r.value("auth_sha256", ""), sha(kEnvOpenaiKey)) << r.dump();
}

TEST(FaultsKeys, ErrorBodyEchoingSecretsLeavesNoTrace) {
  CleanKeys clean;
  ScopedEnv openai("OPENAI_API_KEY", kEnvOpenaiKey);
  Scratch scratch;
  ASSERT_TRUE(write_file(scratch.dir() / ".env",
                         std::string("DEBUG=1\nSERVICE_TOKEN=") + kDotenvToken + "\n")
                  .is_ok());
  // The provider echoes what it was "sent": a key of the environment and a .env value.
  nlohmann::json script = {
      {"default",
       {{"fault", "server_error"},
        {"status", 401},
        {"message", std::string("invalid x-api-key; the request also carried ") + kEnvOpenaiKey +
                        " and " + kDotenvToken}}}};
  auto server = start_server(scratch, script);
  ASSERT_TRUE(server);

  JobOutcome job = scratch.run_job("keys_echo", job_args("keys_echo", example("reduction_cpp"),
                                                         {server_arg(*server, "anthropic")}));
  ASSERT_TRUE(job.cli.exit_code == 0 || job.cli.exit_code == 1) << job.cli.output;
  ASSERT_FALSE(requests_of(*server, "keys_echo").empty()) << job.cli.output;
  ASSERT_TRUE(job.db_error.empty()) << job.db_error;

  EXPECT_EQ(where_found(kEnvOpenaiKey, job, scratch), "") << "OPENAI_API_KEY's value is in";
  EXPECT_EQ(where_found(kDotenvToken, job, scratch), "") << "a .env value is in";
  // The error itself is still there, with the secrets named instead.
  bool reported = false;
  for (const KernelRecord& k : job.kernels) {
    if (k.reason.find("HTTP 401") == std::string::npos) continue;
    reported = true;
    EXPECT_NE(k.reason.find("[redacted OPENAI_API_KEY]"), std::string::npos) << k.reason;
    EXPECT_NE(k.reason.find("[redacted SERVICE_TOKEN]"), std::string::npos) << k.reason;
  }
  EXPECT_TRUE(reported) << job.cli.output;
}

// Needs the lead's redact_secrets calls in search/optimize.cpp for prompt.md and code.txt.
TEST(FaultsKeys, SecretInAPackageFileLeavesNoTrace) {
  CleanKeys clean;
  Scratch scratch;
  ASSERT_TRUE(
      write_file(scratch.dir() / ".env", std::string("SERVICE_TOKEN=") + kDotenvToken + "\n")
          .is_ok());
  fs::path pkg = copy_example(scratch, "reduction_cpp");
  std::string source = file_text(pkg / "reduce.cpp");
  source = replace_all(source, "// [USER_INSTRUCTIONS_END]",
                       std::string("// Our staging service takes the token ") + kDotenvToken +
                           ".\n// [USER_INSTRUCTIONS_END]");
  ASSERT_TRUE(write_file(pkg / "reduce.cpp", source).is_ok());
  nlohmann::json script = polite_refusal();
  script["log_prompts"] = true;
  auto server = start_server(scratch, script);
  ASSERT_TRUE(server);

  JobOutcome job =
      scratch.run_job("keys_prompt", job_args("keys_prompt", pkg, {server_arg(*server, "openai")}));
  ASSERT_TRUE(job.cli.exit_code == 0 || job.cli.exit_code == 1) << job.cli.output;
  auto requests = requests_of(*server, "keys_prompt");
  ASSERT_FALSE(requests.empty()) << job.cli.output;
  for (const auto& r : requests) {
    std::string prompt = r.value("prompt_text", "");
    EXPECT_EQ(prompt.find(kDotenvToken), std::string::npos) << "the LLM was sent a .env value";
    EXPECT_NE(prompt.find("takes the token [redacted SERVICE_TOKEN]"), std::string::npos) << prompt;
  }
  EXPECT_EQ(where_found(kDotenvToken, job, scratch), "") << "a .env value is in";
}

}  // namespace
}  // namespace kf::e2e
