// The job's way to the LLMs: picks a server per call (the ensemble), bounds the calls in flight
// (llm_rate_limit), and keeps every paid answer in the kernel database so that a resumed job
// reuses it instead of paying twice.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <semaphore>
#include <string>
#include <vector>

#include "infer/ensemble.h"
#include "infer/infer.h"
#include "store/store.h"
#include "util/status.h"

namespace kf {

// What a branch gets back: the answer, the server it came from, and whether it was paid for in
// an earlier run of this job.
struct BrokerAnswer {
  LlmAnswer answer;
  std::string server;  // label, e.g. "openai:gpt-4o"
  bool reused = false;
};

// This run's usage: tokens, cost and waiting time of its new calls; `reused` counts the answers
// taken from the database (paid in an earlier run, so in the job's totals only).
struct LlmUsage {
  int calls = 0, reused = 0;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  double cost = 0;
  double seconds = 0;  // wall time spent waiting in new calls
};

class LlmBroker {
 public:
  using ClientFactory =
      std::function<Result<std::unique_ptr<LlmClient>>(const ServerConfig& server)>;

  // One client per ensemble server, and one for the feedback LLM when `feedback` is set.
  static Result<std::unique_ptr<LlmBroker>> create(Store& store, std::string job_name,
                                                   Ensemble ensemble, const ServerConfig* feedback,
                                                   uint64_t seed, int rate_limit,
                                                   const ClientFactory& factory,
                                                   int branches_per_iteration = 1);

  // The answer for (trial, branch): the stored one when this job already has it, else one call
  // to the server the ensemble picks for this trial (deterministic per seed, trial, branch).
  // `cache_prefix_chars`: the static leading part of `user` (Prompt::static_user_chars).
  Result<BrokerAnswer> generate(int trial, int branch, const std::string& parent_uuid,
                                const std::string& system, const std::string& user,
                                size_t cache_prefix_chars = 0);
  // The feedback LLM's summary of kernel `kernel_uuid`'s eval log (stored per kernel).
  Result<BrokerAnswer> feedback(const std::string& kernel_uuid, const std::string& system,
                                const std::string& user);

  // The meta-prompt LLM's new guidance variant after iteration `trial` (purpose "meta_prompt"):
  // one call to the server the ensemble picks, deterministic per seed and trial.
  Result<BrokerAnswer> meta_prompt(int trial, const std::string& system, const std::string& user);

  LlmUsage usage() const;

 private:
  LlmBroker(Store& store, std::string job_name, Ensemble ensemble, uint64_t seed, int rate_limit);
  Result<BrokerAnswer> ask(LlmClient& client, const std::string& key, const LlmRequest& request,
                           const std::string& parent_uuid);

  Store& store_;
  std::string job_name_;
  Ensemble ensemble_;
  std::vector<std::unique_ptr<LlmClient>> clients_;
  std::unique_ptr<LlmClient> feedback_client_;
  uint64_t seed_;
  int branches_ = 1;
  std::counting_semaphore<1024> slots_;
  mutable std::mutex mutex_;
  LlmUsage usage_;
};

// "generate:t<trial>:b<branch>", "feedback:<uuid>", "meta_prompt:t<trial>": the llm_calls key of a
// call.
std::string generate_call_key(int trial, int branch);
std::string feedback_call_key(const std::string& kernel_uuid);
std::string meta_prompt_call_key(int trial);  // "meta_prompt:t<trial>"

}  // namespace kf
