// End-to-end fault tests (issue 7), text: candidates whose output is one 64 KB line, a 1 GiB
// flood or bytes that are not UTF-8, and LLM answers with such bytes, evaluated by `eval` and in
// `run` jobs that complete and then resume. Each crashed the orchestrator (SIGSEGV in log cleaning,
// or "internal error ... invalid UTF-8") before log cleaning became a linear scanner and every
// text bound for JSON was escaped.
#include <gtest/gtest.h>

#include "e2e/cli_helpers.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf::e2e {
namespace {

namespace fs = std::filesystem;

// As cli_helpers.h's, with the text shown cut to 4000 characters (these outputs are long).
#undef EXPECT_CONTAINS
#define EXPECT_CONTAINS(haystack, needle)                                                       \
  EXPECT_NE((haystack).find(needle), std::string::npos) << "missing: " << (needle) << "\nin:\n" \
                                                        << (haystack).substr(0, 4000)

constexpr char kCpp[] = "reduction_cpp";

// Far above a capped eval log (6000 chars of build and test output plus the verdict and timing
// table), far below the megabytes the candidates print.
constexpr size_t kMaxEvalLog = 32 * 1024;

std::vector<std::string> with_quick(std::vector<std::string> args) {
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  return args;
}

// A replay server answering every call, in order, from the files of <scratch>/<folder>.
std::string replay_arg(const Scratch& s, const std::string& folder,
                       const std::vector<std::string>& answers) {
  for (size_t i = 0; i < answers.size(); ++i)
    EXPECT_TRUE(write_file(s.dir() / folder / strprintf("a%02zu.md", i), answers[i]).is_ok());
  return "inference.servers=[{server_type: replay, replay_path: '" + (s.dir() / folder).string() +
         "'}]";
}

std::string answer_with(const std::string& file, const std::string& words) {
  return words + "\n\n```cpp\n" + file_text(candidate(kCpp, file)) + "```\n";
}

// What every stored eval log must be: capped, and text (bytes that are not UTF-8 as \xNN).
void expect_capped_text(const KernelRecord& k) {
  EXPECT_LT(k.eval_log.size(), kMaxEvalLog) << k.eval_log.substr(0, 2000);
  EXPECT_TRUE(is_valid_utf8(k.eval_log)) << k.eval_log.substr(0, 2000);
  EXPECT_TRUE(is_valid_utf8(k.reason)) << k.reason;
}

void expect_long_line_log(const KernelRecord& k) {
  SCOPED_TRACE("long_line.cpp");
  EXPECT_EQ(k.verdict, 5) << k.reason;
  expect_capped_text(k);
  // The head of the 64 KB line is kept and the cut is counted.
  EXPECT_CONTAINS(k.eval_log, "debug row_sums rows=");
  EXPECT_CONTAINS(k.eval_log, "bytes cut]");
}

void expect_flood_log(const KernelRecord& k) {
  SCOPED_TRACE("flood.cpp");
  EXPECT_EQ(k.verdict, 5) << k.reason;
  expect_capped_text(k);
  EXPECT_CONTAINS(k.eval_log, "flood:\\xff\\xfe aaaa");  // its bytes, escaped
  EXPECT_CONTAINS(k.eval_log, "bytes cut");
}

void expect_not_utf8_log(const KernelRecord& k) {
  SCOPED_TRACE("not_utf8.cpp");
  EXPECT_EQ(k.verdict, 5) << k.reason;
  expect_capped_text(k);
  EXPECT_CONTAINS(k.eval_log, "r\\xe9sultat \\xff\\xfe");
  // The code is kept as the bytes it was, not escaped.
  EXPECT_CONTAINS(k.code, "caf\xe9 \xff\xfe.");
}

}  // namespace

TEST(FaultsText, LongLineFloodAndNotUtf8CandidatesGetVerdictsInEval) {
  Scratch s;
  const std::vector<std::string> names = {"long_line.cpp", "flood.cpp", "not_utf8.cpp",
                                          "correct.cpp"};
  std::vector<fs::path> files;
  std::vector<std::string> args =
      with_quick({"eval", "task=" + example(kCpp).string(), "job_name=text_faults"});
  for (const auto& n : names) {
    files.push_back(candidate(kCpp, n));
    args.push_back(files.back().string());
  }
  JobOutcome job = s.run_job("text_faults", args, 240);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  expect_job_recorded(job, files, kCpp);
  ASSERT_EQ(job.kernels.size(), names.size());
  EXPECT_CONTAINS(job.cli.output, "done: 4 evaluated, 4 correct");
  expect_long_line_log(job.kernels[0]);
  expect_flood_log(job.kernels[1]);
  expect_not_utf8_log(job.kernels[2]);
  EXPECT_TRUE(is_valid_utf8(file_text(job.run_dir / "results.json")));
}

// An OpenCL printf without a newline: PoCL passes it to the test child's stdout on every launch.
TEST(FaultsText, OclPrintfWithoutNewlineGetsAVerdict) {
  Scratch s;
  fs::path file = candidate("softmax_ocl", "long_printf.cl");
  JobOutcome job = s.run_job("ocl_printf",
                             with_quick({"eval", "task=" + example("softmax_ocl").string(),
                                         "job_name=ocl_printf", file.string()}),
                             240);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  expect_job_recorded(job, {file}, "softmax_ocl");
  ASSERT_EQ(job.kernels.size(), 1u);
  const KernelRecord& k = job.kernels[0];
  EXPECT_EQ(k.verdict, 5) << k.reason;
  expect_capped_text(k);
  EXPECT_CONTAINS(k.eval_log, "partial0000 partial0001 partial0002");
  EXPECT_CONTAINS(k.eval_log, "bytes cut");
}

// The same candidates as LLM answers (one with prose that is not UTF-8) in a job that completes,
// then resumes and completes again without evaluating anything twice.
TEST(FaultsText, JobWithLongLineFloodAndNotUtf8AnswersCompletesAndResumes) {
  Scratch s;
  const std::vector<std::string> answers = {
      answer_with("long_line.cpp", "Same loop, with a debug print."),
      answer_with("flood.cpp", "Same loop, very chatty."),
      answer_with("not_utf8.cpp", "R\xe9sum\xe9: the same loop \xff\xfe.")};
  std::vector<std::string> args = with_quick(
      {"run", "task=" + example(kCpp).string(), "job_name=text_job", "max_iters=1",
       "branches_per_iteration=3", "llm_rate_limit=1", replay_arg(s, "answers", answers)});
  JobOutcome job = s.run_job("text_job", args, 300);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_TRUE(job.job.has_value()) << job.cli.output;
  EXPECT_EQ(job.job->status, "done");
  ASSERT_EQ(job.kernels.size(), 4u) << job.cli.output;  // iteration 0 and three branches
  EXPECT_EQ(job.kernels[0].trial, 0);
  expect_long_line_log(job.kernels[1]);
  expect_flood_log(job.kernels[2]);
  expect_not_utf8_log(job.kernels[3]);
  EXPECT_EQ(job.kernels[3].answer, answers[2]);  // the answer as it came, byte for byte
  ASSERT_TRUE(job.results.is_object()) << file_text(job.run_dir / "results.json").substr(0, 2000);
  EXPECT_EQ(job.results["kernels"].size(), 4u);

  args.push_back("resume=true");
  JobOutcome resumed = s.run_job("text_job", args, 300);
  ASSERT_EQ(resumed.cli.exit_code, 0) << resumed.cli.output;
  EXPECT_CONTAINS(resumed.cli.output, "(resumed)");
  ASSERT_TRUE(resumed.job.has_value());
  EXPECT_EQ(resumed.job->status, "done");
  ASSERT_EQ(resumed.kernels.size(), 4u) << resumed.cli.output;
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(resumed.kernels[i].uuid, job.kernels[i].uuid);
}

// A package with two EVOLVE blocks stores a candidate's codes as one JSON array: an answer whose
// second block holds bytes that are not UTF-8 made that encoding throw (exit 70, job left
// 'running'). The job completes, keeps the bytes exactly, and resumes.
TEST(FaultsText, TwoBlockAnswerWithBytesThatAreNotUtf8CompletesAndResumes) {
  Scratch s;
  fs::path package = s.dir() / "two_blocks";
  fs::copy(example(kCpp), package, fs::copy_options::recursive);
  auto reduce = read_file(package / "reduce.cpp");
  ASSERT_TRUE(reduce.is_ok()) << reduce.message();
  ASSERT_TRUE(write_file(package / "reduce.cpp", *reduce + "\n// [EVOLVE_START]\n"
                                                           "// Notes on the loop above.\n"
                                                           "// [EVOLVE_END]\n")
                  .is_ok());
  const std::string notes = "// Notes: caf\xe9 \xff\xfe, four accumulators.\n";
  const std::string answer = "Two blocks:\n\n```cpp\n" + file_text(candidate(kCpp, "correct.cpp")) +
                             "```\n\n```cpp\n" + notes + "```\n";
  std::vector<std::string> args = with_quick(
      {"run", "task=" + package.string(), "job_name=two_blocks", "max_iters=1",
       "branches_per_iteration=1", "save_best_kernel=true", replay_arg(s, "answers", {answer})});
  JobOutcome job = s.run_job("two_blocks", args, 300);
  ASSERT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_TRUE(job.job.has_value());
  EXPECT_EQ(job.job->status, "done");
  ASSERT_EQ(job.kernels.size(), 2u) << job.cli.output;
  const KernelRecord& k = job.kernels[1];
  EXPECT_EQ(k.verdict, 5) << k.reason << "\n" << k.eval_log;
  expect_capped_text(k);
  // The stored codes decode to the answer's exact bytes.
  auto codes = nlohmann::json::parse(k.code, nullptr, false);
  ASSERT_TRUE(codes.is_array() && codes.size() == 2u) << k.code;
  ASSERT_TRUE(codes[1].is_object()) << k.code;
  std::string hex;
  for (unsigned char c : notes) hex += strprintf("%02x", c);
  EXPECT_EQ(codes[1].value("hex", ""), hex);
  // When it is the best kernel, its saved package holds the bytes as they were.
  if (job.results.value("best_uuid", "") == k.uuid) {
    EXPECT_CONTAINS(file_text(s.dir() / "results" / "two_blocks" / "reduction_cpp" / "reduce.cpp"),
                    notes);
  }

  args.push_back("resume=true");
  JobOutcome resumed = s.run_job("two_blocks", args, 300);
  ASSERT_EQ(resumed.cli.exit_code, 0) << resumed.cli.output;
  ASSERT_TRUE(resumed.job.has_value());
  EXPECT_EQ(resumed.job->status, "done");
  EXPECT_EQ(resumed.kernels.size(), 2u);
}

}  // namespace kf::e2e
