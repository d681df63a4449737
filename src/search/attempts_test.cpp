// The loop's memory of failures: which earlier attempts a branch's prompt is given (the parent's
// and its ancestors' children that failed or were not faster), and the model's one-line summary.
#include "search/attempts.h"

#include <gtest/gtest.h>

#include "eval/verdict.h"
#include "util/fs.h"

namespace kf {
namespace {

class AttemptsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_attempts_test_");
    ASSERT_TRUE(dir.is_ok());
    dir_ = *dir;
    auto store = Store::open(dir_ / "k.sqlite3");
    ASSERT_TRUE(store.is_ok()) << store.message();
    store_ = std::move(*store);
    for (const char* name : {"job", "other"}) {
      JobRecord j;
      j.job_name = name;
      ASSERT_TRUE(store_->put_job(j).is_ok());
    }
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string put(int trial, int branch, const std::string& parent, int verdict,
                  std::optional<double> speedup = {}, const std::string& job = "job",
                  const std::string& answer = "An answer.\n```opencl\nx\n```\n") {
    KernelRecord k;
    k.uuid = new_uuid();
    k.job_name = job;
    k.parent_uuid = parent;
    k.trial = trial;
    k.branch = branch;
    k.verdict = verdict;
    k.speedup = speedup;
    k.answer = trial == 0 ? "" : answer;
    k.code = "code " + k.uuid;
    EXPECT_TRUE(store_->put_kernel(k).is_ok());
    return k.uuid;
  }

  std::vector<Attempt> attempts(const std::string& parent, int before_trial, size_t max = 4) {
    AttemptQuery q;
    q.job_name = "job";
    q.parent_uuid = parent;
    q.before_trial = before_trial;
    q.max_attempts = max;
    auto r = recent_attempts(*store_, q);
    EXPECT_TRUE(r.is_ok()) << r.message();
    return r.is_ok() ? *r : std::vector<Attempt>{};
  }

  fs::path dir_;
  std::unique_ptr<Store> store_;
};

TEST_F(AttemptsTest, FailedChildrenOfTheParentNewestFirst) {
  std::string seed = put(0, 0, "", kCorrect, 1.0);
  std::string a = put(1, 0, seed, kCompileError);
  std::string b = put(2, 0, seed, kWrongValues);
  auto got = attempts(seed, 3);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].kernel.uuid, b);
  EXPECT_EQ(got[1].kernel.uuid, a);
  EXPECT_EQ(got[0].started_from.uuid, seed);
  EXPECT_EQ(got[0].depth, 0);
}

TEST_F(AttemptsTest, OnlyEarlierIterationsAndNeverTheImprovements) {
  std::string seed = put(0, 0, "", kCorrect, 1.0);
  put(1, 0, seed, kCorrect, 1.5);                       // faster: an improvement, not shown
  std::string slower = put(1, 1, seed, kCorrect, 0.8);  // correct but slower: shown
  put(2, 0, seed, kCompileError);                       // this iteration: not yet
  auto got = attempts(seed, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kernel.uuid, slower);
}

TEST_F(AttemptsTest, LineageAncestorsChildrenComeAfterTheParentsOwn) {
  std::string seed = put(0, 0, "", kCorrect, 1.0);
  std::string old_fail = put(1, 0, seed, kRuntimeError);
  std::string better = put(2, 0, seed, kCorrect, 2.0);
  std::string child_fail = put(3, 0, better, kCompileError);
  put(3, 1, "", kCompileError);  // from scratch: another lineage
  std::string other_job = put(0, 0, "", kCorrect, 1.0, "other");
  put(1, 0, other_job, kCompileError, {}, "other");
  auto got = attempts(better, 4);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0].kernel.uuid, child_fail);
  EXPECT_EQ(got[0].depth, 0);
  EXPECT_EQ(got[1].kernel.uuid, old_fail);
  EXPECT_EQ(got[1].depth, 1);
  EXPECT_EQ(got[1].started_from.uuid, seed);
}

TEST_F(AttemptsTest, BranchesWithoutAnAnswerTeachNothing) {
  std::string seed = put(0, 0, "", kCorrect, 1.0);
  put(1, 0, seed, kNoCode, {}, "job", "");  // the LLM never answered
  EXPECT_TRUE(attempts(seed, 2).empty());
}

TEST_F(AttemptsTest, WithoutAParentTheAttemptsFromScratch) {
  std::string seed = put(0, 0, "", kCompileError);
  std::string scratch = put(1, 0, "", kCompileError);
  put(1, 1, seed, kCompileError);
  auto got = attempts("", 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].kernel.uuid, scratch);
  EXPECT_TRUE(got[0].started_from.uuid.empty());
}

TEST_F(AttemptsTest, AtMostMaxAttempts) {
  std::string seed = put(0, 0, "", kCorrect, 1.0);
  for (int t = 1; t <= 6; ++t) put(t, 0, seed, kCompileError);
  auto got = attempts(seed, 7, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].kernel.trial, 6);
  EXPECT_EQ(got[2].kernel.trial, 4);
  EXPECT_TRUE(attempts(seed, 7, 0).empty());
}

TEST(AnswerSummary, FirstLineOfProseOutsideCode) {
  EXPECT_EQ(answer_summary("Vectorise the rows with float4.\n\nMore text.\n```opencl\nx\n```"),
            "Vectorise the rows with float4.");
  EXPECT_EQ(answer_summary("```opencl\nint a;\n```\n**Summary:** fused the two passes"),
            "fused the two passes");
  EXPECT_EQ(answer_summary("## Plan\nUse local memory."), "Plan");
  EXPECT_EQ(answer_summary("```cuda\nx\n```"), "");
}

}  // namespace
}  // namespace kf
