// Tests for the ensemble: parsing the inference tree, uniform and listed weights, the warm-start
// switch, the statistical proportion of picks, and the errors for bad weights.
#include "infer/ensemble.h"

#include <gtest/gtest.h>

namespace kf {
namespace {

using json = nlohmann::json;

json three_servers() {
  return json::array({{{"server_type", "openai"}, {"model_name", "gpt-4o"}},
                      {{"server_type", "anthropic"}, {"model_name", "claude-x"}},
                      {{"server_type", "openai"}, {"model_name", "o3-mini"}}});
}

std::vector<double> proportions(const Ensemble& e, int trial, int picks, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> counts(e.servers().size(), 0);
  for (int i = 0; i < picks; ++i) counts.at(e.pick(trial, rng)) += 1;
  for (double& c : counts) c /= picks;
  return counts;
}

TEST(EnsembleTest, SingleServerAndUniformDefault) {
  auto e = Ensemble::from_config(
      json{{"servers", json::array({{{"model_name", "gpt-4o"}}})}, {"weights", "uniform"}});
  ASSERT_TRUE(e.is_ok()) << e.message();
  ASSERT_EQ(e->servers().size(), 1u);
  EXPECT_EQ(e->servers()[0].where, "inference.servers[0]");
  std::mt19937_64 rng(1);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(e->pick(i + 1, rng), 0u);

  auto u = Ensemble::from_config(json{{"servers", three_servers()}});  // weights absent
  ASSERT_TRUE(u.is_ok()) << u.message();
  for (double w : u->weights()) EXPECT_DOUBLE_EQ(w, 1.0 / 3);
  for (double p : proportions(*u, 1, 10000, 7)) EXPECT_NEAR(p, 1.0 / 3, 0.02);
}

TEST(EnsembleTest, ListedWeightsAreNormalisedAndFollowed) {
  auto e = Ensemble::from_config(json{{"servers", three_servers()}, {"weights", {5, 3, 2}}});
  ASSERT_TRUE(e.is_ok()) << e.message();
  EXPECT_DOUBLE_EQ(e->weights()[0], 0.5);
  EXPECT_DOUBLE_EQ(e->weights()[2], 0.2);
  std::vector<double> p = proportions(*e, 1, 10000, 42);
  EXPECT_NEAR(p[0], 0.5, 0.02);
  EXPECT_NEAR(p[1], 0.3, 0.02);
  EXPECT_NEAR(p[2], 0.2, 0.02);
}

TEST(EnsembleTest, ZeroWeightIsNeverPicked) {
  auto e = Ensemble::from_config(json{{"servers", three_servers()}, {"weights", {0, 1, 0}}});
  ASSERT_TRUE(e.is_ok()) << e.message();
  std::mt19937_64 rng(3);
  for (int i = 0; i < 2000; ++i) ASSERT_EQ(e->pick(1, rng), 1u);
}

TEST(EnsembleTest, WarmstartSwitchesAfterTrialsWarmstart) {
  auto e = Ensemble::from_config(json{{"servers", three_servers()},
                                      {"weights", {0.0, 0.0, 1.0}},
                                      {"weights_warmstart", {0.5, 0.5, 0.0}},
                                      {"trials_warmstart", 2}});
  ASSERT_TRUE(e.is_ok()) << e.message();
  EXPECT_EQ(e->trials_warmstart(), 2);
  for (int trial : {1, 2}) {
    std::vector<double> p = proportions(*e, trial, 10000, 11);
    EXPECT_NEAR(p[0], 0.5, 0.02) << trial;
    EXPECT_NEAR(p[1], 0.5, 0.02) << trial;
    EXPECT_EQ(p[2], 0.0) << trial;
  }
  for (int trial : {3, 10}) EXPECT_EQ(proportions(*e, trial, 1000, 5)[2], 1.0) << trial;
}

TEST(EnsembleTest, WarmstartNullOrZeroTrialsUsesWeights) {
  auto none = Ensemble::from_config(json{{"servers", three_servers()},
                                         {"weights", {1, 0, 0}},
                                         {"weights_warmstart", nullptr},
                                         {"trials_warmstart", 5}});
  ASSERT_TRUE(none.is_ok()) << none.message();
  EXPECT_TRUE(none->warmstart_weights().empty());
  EXPECT_EQ(proportions(*none, 1, 500, 2)[0], 1.0);

  auto zero = Ensemble::from_config(json{{"servers", three_servers()},
                                         {"weights", {1, 0, 0}},
                                         {"weights_warmstart", {0, 1, 0}},
                                         {"trials_warmstart", 0}});
  ASSERT_TRUE(zero.is_ok()) << zero.message();
  EXPECT_EQ(proportions(*zero, 1, 500, 2)[0], 1.0);
}

TEST(EnsembleTest, SameSeedSamePicks) {
  auto e = Ensemble::from_config(json{{"servers", three_servers()}, {"weights", {1, 1, 1}}});
  ASSERT_TRUE(e.is_ok());
  std::mt19937_64 a(99), b(99);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(e->pick(1, a), e->pick(1, b));
}

TEST(EnsembleTest, BadWeightsAndServersAreErrorsNamingTheKey) {
  struct Case {
    json tree;
    std::string expected;
  };
  std::vector<Case> cases = {
      {{{"servers", three_servers()}, {"weights", {1, 2}}},
       "inference.weights: has 2 weights but there are 3 servers"},
      {{{"servers", three_servers()}, {"weights", {1, -1, 2}}},
       "inference.weights[1]: -1 is not a number >= 0"},
      {{{"servers", three_servers()}, {"weights", {0, 0, 0}}},
       "inference.weights: all weights are 0"},
      {{{"servers", three_servers()}, {"weights", "random"}},
       "inference.weights: 'random' is not a weighting"},
      {{{"servers", three_servers()}, {"weights", 3}}, "inference.weights: expected a list"},
      {{{"servers", three_servers()}, {"weights_warmstart", {1}}},
       "inference.weights_warmstart: has 1 weight but there are 3 servers"},
      {{{"servers", three_servers()}, {"trials_warmstart", -2}},
       "inference.trials_warmstart: expected a whole number >= 0"},
      {{{"servers", json::array()}}, "inference.servers: needs a list of one or more"},
      {{{"weights", "uniform"}}, "inference.servers: needs a list"},
      {{{"servers", json::array({{{"model_name", "m"}, {"temperature", 9}}})}},
       "inference.servers[0].temperature: must be between 0 and 2"},
  };
  for (const Case& c : cases) {
    auto e = Ensemble::from_config(c.tree);
    ASSERT_FALSE(e.is_ok()) << c.tree.dump();
    EXPECT_NE(e.message().find(c.expected), std::string::npos)
        << c.tree.dump() << "\nmessage: " << e.message();
  }
}

}  // namespace
}  // namespace kf
