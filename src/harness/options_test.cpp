// The task binary's command line.
#include <gtest/gtest.h>

#include "harness/options.h"

namespace kf = kernelfoundry;

namespace {

bool parse(std::vector<std::string> args, kf::Options* o, std::string* err) {
  return kf::parse_options(args, o, err);
}

}  // namespace

TEST(Options, Defaults) {
  kf::Options o;
  std::string err;
  ASSERT_TRUE(parse({}, &o, &err)) << err;
  EXPECT_FALSE(o.ref);
  EXPECT_EQ(o.phase, kf::Phase::All);
  EXPECT_EQ(o.seeds, 3);
  EXPECT_DOUBLE_EQ(o.noise, 0.005);
  EXPECT_EQ(o.min_samples, 10);
  EXPECT_EQ(o.max_samples, 2000);
  EXPECT_DOUBLE_EQ(o.time_budget, 2.0);
  EXPECT_DOUBLE_EQ(o.warmup_time, 0.05);
  EXPECT_EQ(o.warmup_iters, 3);
  EXPECT_FALSE(o.warm);
  EXPECT_EQ(o.kernel_dir, ".");
  EXPECT_DOUBLE_EQ(o.peak_gbps, 0.0);
}

TEST(Options, EveryOption) {
  kf::Options o;
  std::string err;
  ASSERT_TRUE(parse({"--ref",       "--phase",
                     "benchmark",   "--seeds",
                     "5",           "--out",
                     "r.json",      "--params",
                     "p.json",      "--template-params",
                     "{\"B\":1}",   "--kernel-dir",
                     "k",           "--noise",
                     "0.01",        "--min-samples",
                     "4",           "--max-samples",
                     "40",          "--time-budget",
                     "1.5",         "--warmup-time",
                     "0.2",         "--warmup-iters",
                     "7",           "--warm",
                     "--peak-gbps", "4800",
                     "--list"},
                    &o, &err))
      << err;
  EXPECT_TRUE(o.ref);
  EXPECT_EQ(o.phase, kf::Phase::Benchmark);
  EXPECT_EQ(o.seeds, 5);
  EXPECT_EQ(o.out, "r.json");
  EXPECT_EQ(o.params_file, "p.json");
  EXPECT_EQ(o.template_params, "{\"B\":1}");
  EXPECT_EQ(o.kernel_dir, "k");
  EXPECT_DOUBLE_EQ(o.noise, 0.01);
  EXPECT_EQ(o.min_samples, 4);
  EXPECT_EQ(o.max_samples, 40);
  EXPECT_DOUBLE_EQ(o.time_budget, 1.5);
  EXPECT_DOUBLE_EQ(o.warmup_time, 0.2);
  EXPECT_EQ(o.warmup_iters, 7);
  EXPECT_TRUE(o.warm);
  EXPECT_DOUBLE_EQ(o.peak_gbps, 4800);
  EXPECT_TRUE(o.list);
}

TEST(Options, EqualsForm) {
  kf::Options o;
  std::string err;
  ASSERT_TRUE(parse({"--phase=correctness", "--seeds=1"}, &o, &err)) << err;
  EXPECT_EQ(o.phase, kf::Phase::Correctness);
  EXPECT_EQ(o.seeds, 1);
}

TEST(Options, ErrorsNameTheProblem) {
  kf::Options o;
  std::string err;
  EXPECT_FALSE(parse({"--sedes", "2"}, &o, &err));
  EXPECT_NE(err.find("did you mean '--seeds'"), std::string::npos) << err;
  EXPECT_FALSE(parse({"--seeds"}, &o, &err));
  EXPECT_NE(err.find("needs a value"), std::string::npos) << err;
  EXPECT_FALSE(parse({"--seeds", "0"}, &o, &err));
  EXPECT_FALSE(parse({"--noise", "abc"}, &o, &err));
  EXPECT_NE(err.find("--noise"), std::string::npos) << err;
  EXPECT_FALSE(parse({"--phase", "bench"}, &o, &err));
  EXPECT_FALSE(parse({"--min-samples", "50", "--max-samples", "10"}, &o, &err));
  EXPECT_FALSE(parse({"--ref=1"}, &o, &err));
  EXPECT_FALSE(parse({"stray"}, &o, &err));
}
