// The optimisation job (DESIGN.md §9-11): iteration 0 evaluates the starting kernel, then each of
// max_iters iterations asks the LLMs for branches_per_iteration rewrites of the EVOLVE block,
// evaluates them, archives and stores them, and feeds the evidence into the next prompts.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

#include "proc/process.h"
#include "search/job.h"
#include "search/llm_broker.h"
#include "util/status.h"

namespace kf {

struct SearchSummary {
  int iterations = 0;  // LLM iterations completed in this job (resumed ones included)
  int evaluated = 0, correct = 0, failures = 0;
  std::optional<double> best_speedup;
  std::optional<SpeedupInterval> best_interval;  // the best's, when it was timed side by side
  std::string best_uuid, best_model;
  int best_trial = -1, best_branch = -1;
  std::string best_template;  // a templated best kernel's chosen combination ("lanes=16, ...")
  LlmUsage usage;
  std::string stop_reason;       // "max_iters", "stop_once_correct", "max_failures", "interrupted"
  std::string best_package_dir;  // results/<job>/<task>/ when save_best_kernel wrote it
};

struct SearchHooks {
  // Makes the client for one server; empty = make_client with the job's .env lookup.
  LlmBroker::ClientFactory client_factory;
};

// Runs the whole job; resume=true continues job_name from the database. Progress goes to `out`,
// one line per candidate.
Result<SearchSummary> run_search(JobContext& job, ProcessRunner& runner, std::ostream& out,
                                 const SearchHooks& hooks = {});

}  // namespace kf
