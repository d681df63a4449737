// LlmBroker with fake clients: answers are stored as they arrive, a second broker on the same job
// (a resumed run) reuses them without calling, ensemble picks are deterministic per branch, and
// the in-flight bound holds.
#include "search/llm_broker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "util/fs.h"

namespace kf {
namespace {

class CountingClient : public LlmClient {
 public:
  explicit CountingClient(ServerConfig server) : server_(std::move(server)) {}
  Result<std::vector<LlmAnswer>> complete(const LlmRequest& request) override {
    int now = ++in_flight_;
    int seen = max_in_flight_.load();
    while (now > seen && !max_in_flight_.compare_exchange_weak(seen, now)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    --in_flight_;
    ++calls_;
    if (fail_) return Status::error(server_.label() + ": HTTP 500 after 3 retries");
    LlmAnswer a;
    a.text = server_.model_name + " answers " + request.purpose + " t" +
             std::to_string(request.trial) + " b" + std::to_string(request.branch);
    a.model = server_.model_name;
    a.finish_reason = "stop";
    a.prompt_tokens = 100;
    a.completion_tokens = 10;
    a.cost = 0.25;
    return std::vector<LlmAnswer>{a};
  }
  const ServerConfig& server() const override { return server_; }

  ServerConfig server_;
  std::atomic<int> calls_{0}, in_flight_{0}, max_in_flight_{0};
  bool fail_ = false;
};

class BrokerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = make_temp_dir(fs::temp_directory_path(), "kf_broker_test_");
    ASSERT_TRUE(dir.is_ok());
    dir_ = *dir;
    auto store = Store::open(dir_ / "k.sqlite3");
    ASSERT_TRUE(store.is_ok()) << store.message();
    store_ = std::move(*store);
    JobRecord job;
    job.job_name = "j";
    ASSERT_TRUE(store_->put_job(job).is_ok());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Two servers, weights 1:1; the factory keeps a pointer to each client it makes.
  std::unique_ptr<LlmBroker> broker(int rate_limit, bool feedback = false,
                                    const std::string& job = "j") {
    nlohmann::json inference = {
        {"servers",
         {{{"server_type", "openai"}, {"model_name", "a"}, {"base_url", "http://127.0.0.1:1"}},
          {{"server_type", "openai"}, {"model_name", "b"}, {"base_url", "http://127.0.0.1:1"}}}},
        {"weights", "uniform"},
        {"weights_warmstart", nullptr},
        {"trials_warmstart", 0}};
    auto ensemble = Ensemble::from_config(inference);
    EXPECT_TRUE(ensemble.is_ok()) << ensemble.message();
    clients_.clear();
    auto factory = [this](const ServerConfig& s) -> Result<std::unique_ptr<LlmClient>> {
      auto c = std::make_unique<CountingClient>(s);
      clients_.push_back(c.get());
      return std::unique_ptr<LlmClient>(std::move(c));
    };
    ServerConfig fb;
    fb.model_name = "summariser";
    fb.base_url = "http://127.0.0.1:1";
    auto b = LlmBroker::create(*store_, job, std::move(*ensemble), feedback ? &fb : nullptr, 7,
                               rate_limit, factory);
    EXPECT_TRUE(b.is_ok()) << b.message();
    return b.is_ok() ? std::move(*b) : nullptr;
  }

  int total_calls() const {
    int n = 0;
    for (auto* c : clients_) n += c->calls_;
    return n;
  }

  fs::path dir_;
  std::unique_ptr<Store> store_;
  std::vector<CountingClient*> clients_;
};

TEST_F(BrokerTest, StoresEachAnswerAndAResumedRunReusesIt) {
  auto first = broker(4);
  auto a = first->generate(1, 0, "parent-1", "sys", "user");
  ASSERT_TRUE(a.is_ok()) << a.message();
  EXPECT_FALSE(a->reused);
  EXPECT_EQ(total_calls(), 1);
  auto stored = store_->llm_call("j", "generate:t1:b0");
  ASSERT_TRUE(stored.is_ok() && stored->has_value());
  EXPECT_EQ((*stored)->answer, a->answer.text);
  EXPECT_EQ((*stored)->parent_uuid, "parent-1");
  EXPECT_EQ((*stored)->prompt, "user");
  EXPECT_EQ((*stored)->system_prompt, "sys");

  // A new broker (the job resumed) gets the same text with no call at all.
  auto second = broker(4);
  auto again = second->generate(1, 0, "parent-1", "sys", "a different prompt");
  ASSERT_TRUE(again.is_ok());
  EXPECT_TRUE(again->reused);
  EXPECT_EQ(again->answer.text, a->answer.text);
  EXPECT_EQ(again->server, a->server);
  EXPECT_EQ(total_calls(), 0) << "the second broker's clients were never called";
  EXPECT_EQ(second->usage().reused, 1);
  EXPECT_EQ(second->usage().calls, 0);
  // Paid in the first run: this run's usage shows no tokens and no cost for it.
  EXPECT_EQ(second->usage().prompt_tokens, 0);
  EXPECT_EQ(second->usage().completion_tokens, 0);
  EXPECT_DOUBLE_EQ(second->usage().cost, 0.0);
  auto totals = store_->llm_totals("j");
  ASSERT_TRUE(totals.is_ok());
  EXPECT_EQ(totals->calls, 1);
  EXPECT_DOUBLE_EQ(totals->cost, 0.25);
}

TEST_F(BrokerTest, PicksAreDeterministicPerBranchAndUseBothServers) {
  std::vector<std::string> servers;
  {
    auto b = broker(4);
    for (int branch = 0; branch < 16; ++branch)
      servers.push_back(b->generate(2, branch, "", "s", "u")->server);
  }
  EXPECT_NE(std::find(servers.begin(), servers.end(), "openai:a"), servers.end());
  EXPECT_NE(std::find(servers.begin(), servers.end(), "openai:b"), servers.end());
  // Same seed, trial and branch in another job: the same server, whatever the call order.
  JobRecord other;
  other.job_name = "j2";
  ASSERT_TRUE(store_->put_job(other).is_ok());
  auto b = broker(4, false, "j2");
  for (int branch = 15; branch >= 0; --branch)
    EXPECT_EQ(b->generate(2, branch, "", "s", "u")->server, servers[size_t(branch)]) << branch;
}

TEST_F(BrokerTest, CallsInFlightStayWithinTheRateLimit) {
  auto b = broker(2);
  std::vector<std::thread> threads;
  for (int branch = 0; branch < 8; ++branch)
    threads.emplace_back([&, branch] { (void)b->generate(1, branch, "", "s", "u"); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(total_calls(), 8);
  int peak = 0;
  for (auto* c : clients_) peak = std::max(peak, c->max_in_flight_.load());
  EXPECT_LE(peak, 2);
}

TEST_F(BrokerTest, FailedCallsAreNotStoredAndFeedbackHasItsOwnKey) {
  auto b = broker(4, /*feedback=*/true);
  for (auto* c : clients_) c->fail_ = true;
  auto failed = b->generate(1, 0, "", "s", "u");
  EXPECT_FALSE(failed.is_ok());
  EXPECT_NE(failed.message().find("HTTP 500"), std::string::npos);
  auto none = store_->llm_call("j", "generate:t1:b0");
  ASSERT_TRUE(none.is_ok());
  EXPECT_FALSE(none->has_value()) << "nothing was paid for, so a resume asks again";

  for (auto* c : clients_) c->fail_ = false;
  auto summary = b->feedback("kernel-1", "s", "log");
  ASSERT_TRUE(summary.is_ok()) << summary.message();
  EXPECT_EQ(summary->server, "openai:summariser");
  auto stored = store_->llm_call("j", "feedback:kernel-1");
  ASSERT_TRUE(stored.is_ok() && stored->has_value());
  EXPECT_EQ((*stored)->purpose, "feedback");
}

}  // namespace
}  // namespace kf
