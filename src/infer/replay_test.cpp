// Tests for the replay client: a folder of answers (name order, t<trial>_b<branch>.md pins,
// feedback/), a past job in a temporary SQLite store, and the errors of both.
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "infer/infer.h"
#include "infer/test_support.h"
#include "store/store.h"
#include "util/strings.h"

namespace kf {
namespace {

class ReplayTest : public TempDirTest {
 protected:
  ServerConfig replay(const std::string& path) const {
    ServerConfig s;
    s.type = ServerType::kReplay;
    s.replay_path = path;
    s.where = "inference.servers[2]";
    return s;
  }

  std::unique_ptr<LlmClient> client(const ServerConfig& s, Store* store = nullptr) {
    ClientOptions options;
    options.store = store;
    auto c = make_client(s, options);
    EXPECT_TRUE(c.is_ok()) << c.message();
    return c.is_ok() ? std::move(c.value()) : nullptr;
  }

  static LlmRequest at(int trial, int branch, const std::string& purpose = "generate") {
    LlmRequest r;
    r.user = "prompt text of some length";
    r.trial = trial;
    r.branch = branch;
    r.purpose = purpose;
    return r;
  }

  static std::string text_of(Result<std::vector<LlmAnswer>> answers) {
    EXPECT_TRUE(answers.is_ok()) << answers.message();
    return answers.is_ok() && !answers->empty() ? answers->front().text : "<error>";
  }

  void write(const std::string& name, const std::string& content) {
    ASSERT_TRUE(write_file(dir_ / "answers" / name, content).is_ok());
  }
};

TEST_F(ReplayTest, FolderCyclesInNameOrder) {
  write("b.md", "answer b");
  write("a.txt", "answer a");
  write("c.md", "answer c");
  write("notes.json", "{}");  // not an answer
  auto c = client(replay((dir_ / "answers").string()));
  ASSERT_TRUE(c);
  std::vector<std::string> got;
  for (int i = 0; i < 4; ++i) got.push_back(text_of(c->complete(at(i + 1, 0))));
  EXPECT_EQ(got, (std::vector<std::string>{"answer a", "answer b", "answer c", "answer a"}));

  auto answers = c->complete(at(1, 0));
  ASSERT_TRUE(answers.is_ok());
  const LlmAnswer& a = answers->front();
  EXPECT_EQ(a.finish_reason, "stop");
  EXPECT_EQ(a.completion_tokens, 2);  // "answer b": 8 chars / 4
  EXPECT_EQ(a.prompt_tokens, 6);
  EXPECT_DOUBLE_EQ(a.cost, 0);
  EXPECT_EQ(a.attempts, 1);
  EXPECT_EQ(a.model, "replay:" + (dir_ / "answers").string());
}

TEST_F(ReplayTest, SequenceOrdersTheFolderWhateverTheCallOrder) {
  write("a.md", "answer a");
  write("b.md", "answer b");
  write("c.md", "answer c");
  auto c = client(replay((dir_ / "answers").string()));
  ASSERT_TRUE(c);
  // Calls arrive out of order; each takes the file of its place in the job.
  for (int64_t seq : {4, 0, 2, 1}) {
    LlmRequest r = at(1, 0);
    r.sequence = seq;
    const char* want[] = {"answer a", "answer b", "answer c"};
    EXPECT_EQ(text_of(c->complete(r)), want[seq % 3]) << seq;
  }
}

TEST_F(ReplayTest, TrialBranchFilesPinAnswersUnderConcurrency) {
  write("a.md", "generic");
  write("t1_b0.md", "iteration 1 branch 0");
  write("t1_b1.md", "iteration 1 branch 1");
  write("t2_b0.md", "iteration 2 branch 0");
  auto c = client(replay((dir_ / "answers").string()));
  ASSERT_TRUE(c);
  const std::vector<std::pair<int, int>> calls = {{1, 0}, {1, 1}, {2, 0}};
  std::vector<std::thread> threads;
  std::vector<std::string> got(9);
  for (int i = 0; i < 9; ++i)
    threads.emplace_back(
        [&, i] { got[i] = text_of(c->complete(at(calls[i % 3].first, calls[i % 3].second))); });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 9; ++i)
    EXPECT_EQ(got[i], strprintf("iteration %d branch %d", calls[i % 3].first, calls[i % 3].second))
        << i;
  // Without a pin file the call takes the next file in name order ("a.md" sorts first).
  std::string unpinned = text_of(c->complete(at(7, 3)));
  EXPECT_TRUE(unpinned == "generic" || unpinned.starts_with("iteration ")) << unpinned;
}

TEST_F(ReplayTest, FeedbackUsesItsSubfolder) {
  write("a.md", "kernel answer");
  write("feedback/1.md", "feedback one");
  write("feedback/2.md", "feedback two");
  auto c = client(replay((dir_ / "answers").string()));
  ASSERT_TRUE(c);
  EXPECT_EQ(text_of(c->complete(at(1, 0, "feedback"))), "feedback one");
  EXPECT_EQ(text_of(c->complete(at(1, 0))), "kernel answer");
  EXPECT_EQ(text_of(c->complete(at(1, 0, "feedback"))), "feedback two");
}

TEST_F(ReplayTest, MetaPromptCallsGetNoRecordedAnswer) {
  write("1.md", "```opencl\n__kernel void k() {}\n```");
  auto c = client(replay((dir_ / "answers").string()));
  ASSERT_TRUE(c);
  auto answers = c->complete(at(1, 0, "meta_prompt"));
  ASSERT_FALSE(answers.is_ok());
  EXPECT_NE(answers.message().find("meta-prompt"), std::string::npos) << answers.message();
}

TEST_F(ReplayTest, FeedbackWithoutSubfolderIsAnError) {
  write("a.md", "kernel answer");
  auto c = client(replay((dir_ / "answers").string()));
  ASSERT_TRUE(c);
  auto answers = c->complete(at(1, 0, "feedback"));
  ASSERT_FALSE(answers.is_ok());
  EXPECT_NE(answers.message().find("feedback"), std::string::npos) << answers.message();
}

TEST_F(ReplayTest, SeveralCompletionsTakeSuccessiveFiles) {
  write("1.md", "one");
  write("2.md", "two");
  write("3.md", "three");
  ServerConfig s = replay((dir_ / "answers").string());
  s.num_completions = 2;
  auto c = client(s);
  ASSERT_TRUE(c);
  auto answers = c->complete(at(5, 0));
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  ASSERT_EQ(answers->size(), 2u);
  EXPECT_EQ((*answers)[0].text, "one");
  EXPECT_EQ((*answers)[1].text, "two");
  EXPECT_EQ((*answers)[1].prompt_tokens, 0);  // the prompt counts once per call
  EXPECT_EQ(text_of(c->complete(at(5, 0))), "three");
}

TEST_F(ReplayTest, RelativeFolderResolvesAgainstTheCurrentDirectory) {
  write("only.md", "relative works");
  std::error_code ec;
  fs::path before = fs::current_path();
  fs::current_path(dir_);
  auto c = make_client(replay("answers"), ClientOptions{});
  fs::current_path(before, ec);
  ASSERT_TRUE(c.is_ok()) << c.message();
  EXPECT_EQ(text_of(c.value()->complete(at(1, 0))), "relative works");
}

TEST_F(ReplayTest, MissingOrEmptyFolderNamesTheKey) {
  auto missing = make_client(replay((dir_ / "nope").string()), ClientOptions{});
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.message().find("inference.servers[2].replay_path"), std::string::npos)
      << missing.message();
  EXPECT_NE(missing.message().find("does not exist"), std::string::npos) << missing.message();

  write("readme.json", "{}");
  auto empty = make_client(replay((dir_ / "answers").string()), ClientOptions{});
  ASSERT_FALSE(empty.is_ok());
  EXPECT_NE(empty.message().find("inference.servers[2].replay_path"), std::string::npos)
      << empty.message();
  EXPECT_NE(empty.message().find("no recorded answers"), std::string::npos) << empty.message();
}

class ReplayJobTest : public ReplayTest {
 protected:
  void SetUp() override {
    ReplayTest::SetUp();
    auto store = Store::open(dir_ / "kernels.sqlite3");
    ASSERT_TRUE(store.is_ok()) << store.message();
    store_ = std::move(store.value());
    JobRecord job;
    job.job_name = "past_run";
    job.task_name = "softmax";
    ASSERT_TRUE(store_->put_job(job).is_ok());
    put(0, 0, "", "");  // iteration 0: the original kernel, no LLM answer
    put(1, 0, "answer t1 b0", "gpt-4o");
    put(1, 1, "answer t1 b1", "claude-x");
    put(2, 0, "answer t2 b0", "gpt-4o", "length");
  }

  void put(int trial, int branch, const std::string& answer, const std::string& model,
           const std::string& finish_reason = "") {
    KernelRecord k;
    k.uuid = new_uuid();
    k.job_name = "past_run";
    k.task_name = "softmax";
    k.trial = trial;
    k.branch = branch;
    k.answer = answer;
    k.model = model;
    k.finish_reason = finish_reason;
    ASSERT_TRUE(store_->put_kernel(k).is_ok());
  }

  std::unique_ptr<Store> store_;
};

TEST_F(ReplayJobTest, AnswersByTrialAndBranch) {
  auto c = client(replay("job:past_run"), store_.get());
  ASSERT_TRUE(c);
  auto answers = c->complete(at(1, 1));
  ASSERT_TRUE(answers.is_ok()) << answers.message();
  EXPECT_EQ(answers->front().text, "answer t1 b1");
  EXPECT_EQ(answers->front().model, "replay:claude-x");
  EXPECT_DOUBLE_EQ(answers->front().cost, 0);
  EXPECT_EQ(answers->front().completion_tokens, 3);
  auto cut = c->complete(at(2, 0));
  ASSERT_TRUE(cut.is_ok()) << cut.message();
  EXPECT_EQ(cut->front().text, "answer t2 b0");
  EXPECT_TRUE(cut->front().truncated);  // replayed as it was recorded
  EXPECT_FALSE(answers->front().truncated);
  EXPECT_EQ(text_of(c->complete(at(1, 0))), "answer t1 b0");

  auto missing = c->complete(at(3, 1));
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.message().find("job past_run has no recorded answer for iteration 3, branch 1"),
            std::string::npos)
      << missing.message();
}

TEST_F(ReplayJobTest, UnknownJobOrNoStoreIsAnError) {
  auto unknown = make_client(replay("job:never_ran"), ClientOptions{.store = store_.get()});
  ASSERT_FALSE(unknown.is_ok());
  EXPECT_NE(unknown.message().find("never_ran"), std::string::npos) << unknown.message();
  EXPECT_NE(unknown.message().find("inference.servers[2].replay_path"), std::string::npos);

  auto no_store = make_client(replay("job:past_run"), ClientOptions{});
  ASSERT_FALSE(no_store.is_ok());
  EXPECT_NE(no_store.message().find("kernel database"), std::string::npos) << no_store.message();
}

}  // namespace
}  // namespace kf
