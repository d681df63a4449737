// End to end: configs written for the Python KernelFoundry on the reduction_cpp example (host
// C++, no GPU) against the scripted LLM server on loopback: `_target_` / `verbose` in the
// inference section are ignored with one note; `max_iters=0` / `validate=true` with
// start_from_best or kernels_iter_0_path (`best-jobA/jobB`, a file) evaluate that kernel and call
// no LLM.
#include <gtest/gtest.h>

#include "e2e/cli_helpers.h"
#include "llm_server/llm_server_fixture.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

constexpr char kTask[] = "reduction_cpp";

std::string correct_answer() {
  return "Four accumulators per row.\n\n```cpp\n" + file_text(candidate(kTask, "correct.cpp")) +
         "```\n";
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// The line of `text` that holds `needle` ("" when none).
std::string line_with(const std::string& text, const std::string& needle) {
  for (const std::string& line : split_lines(text))
    if (line.find(needle) != std::string::npos) return line;
  return "";
}

std::vector<std::string> with_quick(std::vector<std::string> args) {
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  return args;
}

TEST(CliCompat, PythonInferenceSectionRunsWithOneNote) {
  Scratch s;
  auto server = LlmTestServer::start(nlohmann::json{{"default", {{"content", correct_answer()}}}},
                                     s.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  // The package's config.yaml with an inference section as the Python KernelFoundry writes it.
  fs::path pkg = s.dir() / "pkg";
  fs::copy(example(kTask), pkg, fs::copy_options::recursive);
  std::string config = file_text(pkg / "config.yaml");
  ASSERT_FALSE(config.empty());
  ASSERT_TRUE(write_file(pkg / "config.yaml",
                         config +
                             "inference:\n"
                             "  _target_: kernelgen.inference_server.LLMEnsemble\n"
                             "  servers:\n"
                             "    - _target_: kernelgen.inference_server.InferenceServer\n"
                             "      server_type: openai\n"
                             "      model_name: scripted-openai\n"
                             "      base_url: '" +
                             (*server)->base_url_openai() +
                             "'\n"
                             "      verbose: False\n"
                             "      timeout: 5\n"
                             "      max_retry: 0\n"
                             "  weights: uniform\n")
                  .is_ok());

  JobOutcome job = s.run_job(
      "compat_python_config",
      with_quick({"run", "task=" + pkg.string(), "job_name=compat_python_config", "max_iters=1",
                  "branches_per_iteration=1", "inference.servers.0.verbose=true"}));
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output << (*server)->stderr_text();
  // One note for every ignored key of the run, naming the keys and where they were written.
  EXPECT_EQ(count_of(job.cli.output, "ignoring `_target_`"), 1u) << job.cli.output;
  std::string note = line_with(job.cli.output, "ignoring `_target_`");
  EXPECT_TRUE(
      starts_with(note, "kernelfoundry: note: ignoring `_target_`, `verbose` in inference ("))
      << note;
  EXPECT_CONTAINS(note, "config.yaml:10), inference.servers[0] (");
  EXPECT_CONTAINS(note, "config.yaml:12)");
  EXPECT_CONTAINS(note, "KernelFoundry chooses the client from server_type");
  // The job ran as configured: the starting kernel, then one answer of the scripted model.
  ASSERT_TRUE(job.db_error.empty()) << job.db_error;
  ASSERT_EQ(job.kernels.size(), 2u) << job.cli.output;
  EXPECT_EQ(job.kernels[1].model, "scripted-openai");
  EXPECT_EQ(job.kernels[1].verdict, 5) << job.kernels[1].reason;
  EXPECT_EQ((*server)->log_lines().size(), 1u);
  // The stored config holds none of the ignored keys.
  ASSERT_TRUE(job.job.has_value());
  EXPECT_EQ(job.job->config_json.find("_target_"), std::string::npos);
  EXPECT_EQ(job.job->config_json.find("verbose"), std::string::npos);
}

TEST(CliCompat, EvaluateOnlyEvaluatesTheStartingKernelWithoutAnyLlmCall) {
  Scratch s;
  // Every run points at the scripted server, which must see no request.
  auto server = LlmTestServer::start(nlohmann::json{{"default", {{"content", correct_answer()}}}},
                                     s.dir() / "server");
  ASSERT_TRUE(server.is_ok()) << server.message();
  const std::string servers =
      "inference.servers=[{server_type: openai, model_name: scripted, "
      "base_url: '" +
      (*server)->base_url_openai() + "', timeout: 5, max_retry: 0}]";
  const std::string task = "task=" + example(kTask).string();

  // A correct kernel stored by an earlier job, jobA.
  const fs::path correct = candidate(kTask, "correct.cpp");
  JobOutcome a = s.run_job("jobA", with_quick({"eval", task, "job_name=jobA", correct.string()}));
  ASSERT_EQ(a.cli.exit_code, 0) << a.cli.output;
  ASSERT_EQ(a.kernels.size(), 1u) << a.cli.output;
  ASSERT_EQ(a.kernels[0].verdict, 5) << a.kernels[0].reason;
  const std::string stored = a.kernels[0].uuid;

  // start_from_best (the task's best kernel of any job), while jobA's is the only one stored;
  // then the Python KernelFoundry's `best-jobA/jobB`: the best kernel of either job (not the
  // copy the first check stored under its own job, which may read faster by timing noise).
  for (const std::vector<std::string>& how :
       {std::vector<std::string>{"max_iters=0", "start_from_best=true"},
        std::vector<std::string>{"validate=true", "kernels_iter_0_path=best-jobA/jobB"}}) {
    std::string job_name = "check_" + replace_all(replace_all(how[1], "/", "_"), "=", "_");
    SCOPED_TRACE(job_name);
    std::vector<std::string> args = {"run", task, "job_name=" + job_name, servers};
    args.insert(args.end(), how.begin(), how.end());
    JobOutcome job = s.run_job(job_name, with_quick(args));
    EXPECT_EQ(job.cli.exit_code, 0) << job.cli.output;
    std::string line = line_with(job.cli.output, "[1/1] ");
    EXPECT_TRUE(starts_with(line, "[1/1] best stored kernel (job jobA, ")) << job.cli.output;
    EXPECT_CONTAINS(line, "verdict 5 (correct)");
    EXPECT_CONTAINS(line, "speedup ");
    EXPECT_CONTAINS(job.cli.output, "done: 1 evaluated, 1 correct");
    ASSERT_EQ(job.kernels.size(), 1u) << job.cli.output;
    EXPECT_EQ(job.kernels[0].code, file_text(correct));
    EXPECT_EQ(job.kernels[0].parent_uuid, stored);
    EXPECT_EQ(job.kernels[0].verdict, 5) << job.kernels[0].reason;
    EXPECT_TRUE(job.kernels[0].speedup.has_value());
  }

  // A file given on the command line: that file is evaluated, not the EVOLVE block.
  const fs::path wrong = candidate(kTask, "first_call_only.cpp");
  JobOutcome file = s.run_job(
      "check_file", with_quick({"run", task, "job_name=check_file", servers, "validate=true",
                                "kernels_iter_0_path=" + wrong.string()}));
  EXPECT_EQ(file.cli.exit_code, 1) << file.cli.output;
  EXPECT_CONTAINS(line_with(file.cli.output, "[1/1] "), "[1/1] first_call_only.cpp");
  ASSERT_EQ(file.kernels.size(), 1u) << file.cli.output;
  EXPECT_EQ(file.kernels[0].code, file_text(wrong));
  EXPECT_EQ(file.kernels[0].verdict, 4) << file.kernels[0].reason;

  // Jobs with no correct kernel: an error naming the key, before anything is evaluated.
  JobOutcome none = s.run_job(
      "check_none", with_quick({"run", task, "job_name=check_none", servers, "validate=true",
                                "kernels_iter_0_path=best-nosuch/other"}));
  EXPECT_EQ(none.cli.exit_code, 2) << none.cli.output;
  EXPECT_CONTAINS(none.cli.output, "kernels_iter_0_path 'best-nosuch/other'");
  EXPECT_CONTAINS(none.cli.output, "jobs 'nosuch', 'other' have no correct kernel");
  EXPECT_TRUE(none.kernels.empty());

  EXPECT_TRUE((*server)->log_lines().empty()) << "an evaluate-only run called the LLM";
}

}  // namespace
}  // namespace kf::e2e
