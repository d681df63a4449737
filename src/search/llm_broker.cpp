// LlmBroker: ensemble picks, the in-flight bound, and the stored answers that make resume free.
#include "search/llm_broker.h"

#include <algorithm>
#include <chrono>
#include <random>

#include "util/strings.h"

namespace kf {

std::string generate_call_key(int trial, int branch) {
  return strprintf("generate:t%d:b%d", trial, branch);
}

std::string feedback_call_key(const std::string& kernel_uuid) {
  return "feedback:" + kernel_uuid;
}

LlmBroker::LlmBroker(Store& store, std::string job_name, Ensemble ensemble, uint64_t seed,
                     int rate_limit)
    : store_(store),
      job_name_(std::move(job_name)),
      ensemble_(std::move(ensemble)),
      seed_(seed),
      slots_(std::clamp(rate_limit, 1, 1024)) {}

Result<std::unique_ptr<LlmBroker>> LlmBroker::create(Store& store, std::string job_name,
                                                     Ensemble ensemble,
                                                     const ServerConfig* feedback, uint64_t seed,
                                                     int rate_limit, const ClientFactory& factory,
                                                     int branches_per_iteration) {
  std::unique_ptr<LlmBroker> broker(
      new LlmBroker(store, std::move(job_name), std::move(ensemble), seed, rate_limit));
  broker->branches_ = std::max(1, branches_per_iteration);
  for (const ServerConfig& server : broker->ensemble_.servers()) {
    auto client = factory(server);
    if (!client) return client.status();
    broker->clients_.push_back(std::move(*client));
  }
  if (feedback) {
    auto client = factory(*feedback);
    if (!client) return client.status();
    broker->feedback_client_ = std::move(*client);
  }
  return broker;
}

Result<BrokerAnswer> LlmBroker::ask(LlmClient& client, const std::string& key,
                                    const LlmRequest& request, const std::string& parent_uuid) {
  auto stored = store_.llm_call(job_name_, key);
  if (!stored) return stored.status();
  if (stored->has_value()) {
    const LlmCallRecord& c = **stored;
    BrokerAnswer out;
    out.reused = true;
    out.server = c.server;
    out.answer.text = c.answer;
    out.answer.finish_reason = c.finish_reason;
    out.answer.model = c.model;
    out.answer.truncated = c.truncated;
    out.answer.prompt_tokens = c.prompt_tokens;
    out.answer.completion_tokens = c.completion_tokens;
    out.answer.cached_tokens = c.cached_tokens;
    out.answer.cache_write_tokens = c.cache_write_tokens;
    out.answer.reasoning_tokens = c.reasoning_tokens;
    out.answer.cost = c.cost;
    out.answer.attempts = c.attempts;
    out.answer.latency_s = c.latency_s;
    // Paid in an earlier run: it counts in the job's totals, not in this run's usage.
    std::lock_guard<std::mutex> lock(mutex_);
    ++usage_.reused;
    return out;
  }

  slots_.acquire();
  auto start = std::chrono::steady_clock::now();
  auto answers = client.complete(request);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  slots_.release();
  if (!answers) return answers.status();
  if (answers->empty())
    return Status::error(client.server().label() + " returned no answer (no choices)");

  // One answer per call is used; the usage of extra completions is still paid and counted.
  BrokerAnswer out;
  out.server = client.server().label();
  out.answer = answers->front();
  for (size_t i = 1; i < answers->size(); ++i) {
    out.answer.prompt_tokens += (*answers)[i].prompt_tokens;
    out.answer.completion_tokens += (*answers)[i].completion_tokens;
    out.answer.cached_tokens += (*answers)[i].cached_tokens;
    out.answer.cache_write_tokens += (*answers)[i].cache_write_tokens;
    out.answer.reasoning_tokens += (*answers)[i].reasoning_tokens;
    out.answer.cost += (*answers)[i].cost;
  }
  if (out.answer.model.empty()) out.answer.model = client.server().model_name;

  LlmCallRecord record;
  record.job_name = job_name_;
  record.call_key = key;
  record.purpose = request.purpose;
  record.trial = request.trial;
  record.branch = request.branch;
  record.parent_uuid = parent_uuid;
  record.server = out.server;
  record.model = out.answer.model;
  record.system_prompt = request.system;
  record.prompt = request.user;
  record.answer = out.answer.text;
  record.finish_reason = out.answer.finish_reason;
  record.truncated = out.answer.truncated;
  record.prompt_tokens = out.answer.prompt_tokens;
  record.completion_tokens = out.answer.completion_tokens;
  record.cached_tokens = out.answer.cached_tokens;
  record.cache_write_tokens = out.answer.cache_write_tokens;
  record.reasoning_tokens = out.answer.reasoning_tokens;
  record.cost = out.answer.cost;
  record.attempts = out.answer.attempts;
  record.latency_s = seconds;
  // Saved before anything else happens with it: a crash from here on does not lose the answer.
  KF_RETURN_IF_ERROR(store_.put_llm_call(record));

  std::lock_guard<std::mutex> lock(mutex_);
  ++usage_.calls;
  usage_.prompt_tokens += out.answer.prompt_tokens;
  usage_.completion_tokens += out.answer.completion_tokens;
  usage_.cost += out.answer.cost;
  usage_.seconds += seconds;
  return out;
}

Result<BrokerAnswer> LlmBroker::generate(int trial, int branch, const std::string& parent_uuid,
                                         const std::string& system, const std::string& user,
                                         size_t cache_prefix_chars) {
  // A generator per (seed, trial, branch): the same server is picked for a branch however the
  // branches interleave, and again when the job is resumed.
  std::seed_seq seq{seed_, uint64_t(trial), uint64_t(branch), uint64_t(0x6b66)};
  std::mt19937_64 rng(seq);
  size_t pick = ensemble_.pick(trial, rng);
  LlmRequest request{system, user, job_name_, trial, branch, "generate"};
  request.sequence = int64_t(std::max(0, trial - 1)) * branches_ + branch;
  request.cache_prefix_chars = cache_prefix_chars;
  return ask(*clients_[pick], generate_call_key(trial, branch), request, parent_uuid);
}

Result<BrokerAnswer> LlmBroker::feedback(const std::string& kernel_uuid, const std::string& system,
                                         const std::string& user) {
  if (!feedback_client_)
    return Status::error("internal: feedback LLM asked for but use_feedback_llm is off");
  LlmRequest request{system, user, job_name_, 0, 0, "feedback"};
  return ask(*feedback_client_, feedback_call_key(kernel_uuid), request, kernel_uuid);
}

std::string meta_prompt_call_key(int trial) {
  return strprintf("meta_prompt:t%d", trial);
}

Result<BrokerAnswer> LlmBroker::meta_prompt(int trial, const std::string& system,
                                            const std::string& user) {
  std::seed_seq seq{seed_, uint64_t(trial), uint64_t(0x6d657461)};
  std::mt19937_64 rng(seq);
  size_t pick = ensemble_.pick(trial, rng);
  LlmRequest request{system, user, job_name_, trial, 0, "meta_prompt"};
  return ask(*clients_[pick], meta_prompt_call_key(trial), request, "");
}

LlmUsage LlmBroker::usage() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return usage_;
}

}  // namespace kf
