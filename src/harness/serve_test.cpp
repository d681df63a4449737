// The judge of a whole job (--serve): checks one candidate's handed-over outputs after another
// against what it keeps in memory, and a wrong candidate does not spoil the next check.
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "harness/test_util.h"
#include "kernelfoundry/harness.h"

namespace kf = kernelfoundry;
using kf::testing::quick_benchmark_args;
using kf::testing::run_main;

namespace {

// y = x * 2 over n floats; the candidate goes wrong after `wrong_after` calls (0 = never).
struct Twice : kf::Problem {
  int wrong_after = 0;
  int calls = 0;

  void setup(kf::Case& c) override {
    long n = c.dim("n");
    c.input("x", kf::f32, n, kf::uniform(-1, 1));
    c.output("y", kf::f32, n, kf::tolerance(1e-6, 1e-6));
  }
  void run(kf::Case& c, kf::Impl impl) override {
    long n = c.dim("n");
    const float* x = c.buffer("x").host<float>();
    float* y = c.buffer("y").host<float>();
    bool wrong = impl == kf::Impl::Candidate && wrong_after > 0 && ++calls > wrong_after;
    for (long i = 0; i < n; ++i) y[i] = x[i] * 2 + (wrong && i == n / 2 ? 1.0f : 0.0f);
  }
};

kf::Suite suite() {
  kf::Suite s;
  s.backend = kf::Backend::Host;
  s.correctness = {{{"n", 7}}, {{"n", 1000}}};
  s.benchmarks = {kf::benchmark("twice", {{{"n", 4096}}, {{"n", 5000}}})};
  return s;
}

std::vector<std::string> args_with(std::vector<std::string> extra) {
  std::vector<std::string> args = quick_benchmark_args();
  args.insert(args.end(), {"--seeds", "2"});
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

// The candidate child ends with _Exit (nothing of its own runs after its result): in a fork.
void dump_candidate(int wrong_after, const std::string& dir) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    Twice p;
    p.wrong_after = wrong_after;
    run_main(p, suite(), args_with({"--dump-dir", dir}));
    ::_exit(99);  // not reached: the dumping child ends itself
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  ASSERT_EQ(WEXITSTATUS(status), 0);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return nlohmann::json::parse(s.str(), nullptr, false);
}

double phase_seconds(const nlohmann::json& report, const std::string& name) {
  const nlohmann::json& phases = report["phase_seconds"];
  return phases.contains(name) ? phases[name].get<double>() : -1;
}

}  // namespace

TEST(JudgeServe, ChecksCandidatesInTurnFromWhatItKeeps) {
  std::string root = kf::testing::make_temp_dir();
  std::string expected = root + "/expected", good = root + "/good", bad = root + "/bad";
  Twice ref;
  auto written = run_main(ref, suite(), args_with({"--ref", "--expected-out", expected}));
  ASSERT_EQ(written.exit_code, 0) << written.stdout_text;
  dump_candidate(0, good);
  // 10 correctness calls (2 shapes x 2 seeds x 2 calls, 2 benchmark shapes x 1 call): correct
  // there, wrong in every call of the benchmark phase (so whichever timed call is picked).
  dump_candidate(10, bad);

  std::istringstream requests(
      "warm\tw1\n"
      "check\tn1\tall\t" +
      good + "\t" + root + "/a.json\n" + "check\tn2\tall\t" + bad + "\t" + root + "/b.json\n" +
      "not a request\n" + "check\tn3\tall\t" + good + "\t" + root + "/c.json\n");
  std::streambuf* old = std::cin.rdbuf(requests.rdbuf());
  Twice judge;
  auto served = run_main(judge, suite(), args_with({"--ref", "--serve", "--expected", expected}));
  std::cin.rdbuf(old);
  EXPECT_EQ(served.exit_code, 0) << served.stdout_text;
  const std::string& out = served.stdout_text;
  EXPECT_NE(out.find("judge ready"), std::string::npos) << out;
  EXPECT_NE(out.find("kf-judge-done w1 0"), std::string::npos) << out;
  EXPECT_NE(out.find("kf-judge-done n1 0"), std::string::npos) << out;
  EXPECT_NE(out.find("kf-judge-done n2 1"), std::string::npos) << out;
  EXPECT_NE(out.find("ignored a request"), std::string::npos) << out;
  EXPECT_NE(out.find("kf-judge-done n3 0"), std::string::npos) << out;

  nlohmann::json a = read_json(root + "/a.json"), b = read_json(root + "/b.json"),
                 c = read_json(root + "/c.json");
  EXPECT_EQ(a["status"], "pass") << a.dump();
  EXPECT_EQ(b["status"], "wrong") << b.dump();
  // Caught by the check of the picked timed call, or by the call on fresh inputs after the timing
  // loop: once in CI the picked call was one of the first, still right (the correctness phase's
  // call count is not fixed), and the second check caught it.
  std::string why = b["reason"].get<std::string>();
  EXPECT_TRUE(why.find("timed call") != std::string::npos ||
              why.find("after the timing loop") != std::string::npos)
      << why;
  // The wrong candidate's check left the kept inputs as drawn: the good one passes again.
  EXPECT_EQ(c["status"], "pass") << c.dump();
  // Warmed: no check regenerated inputs or re-ran the reference for the call after timing.
  EXPECT_EQ(phase_seconds(a, "check.setup"), 0.0) << a["phase_seconds"];
  EXPECT_EQ(phase_seconds(c, "check.setup"), 0.0) << c["phase_seconds"];

  // A one-shot checker gives the same verdicts, regenerating the inputs itself.
  Twice once;
  auto single =
      run_main(once, suite(), args_with({"--ref", "--check", good, "--expected", expected}));
  EXPECT_EQ(single.exit_code, 0) << single.stdout_text;
  EXPECT_GT(phase_seconds(single.json, "check.setup"), 0.0) << single.json["phase_seconds"];
}

// Untrusted handed-over outputs, each refused with a reason, and none leaves anything behind in
// the judge: the good candidate's outputs still pass after them, from what the judge keeps.
TEST(JudgeServe, ForgedOutputsAreRefusedAndSpoilNothing) {
  std::string root = kf::testing::make_temp_dir();
  std::string expected = root + "/expected", good = root + "/good";
  Twice ref;
  ASSERT_EQ(run_main(ref, suite(), args_with({"--ref", "--expected-out", expected})).exit_code, 0);
  dump_candidate(0, good);
  auto copy_of_good = [&](const std::string& name) {
    std::string dir = root + "/" + name;
    std::filesystem::copy(good, dir, std::filesystem::copy_options::recursive);
    return dir;
  };
  std::string text = copy_of_good("text");
  kf::testing::write_text(text + "/manifest.json", "not a manifest");
  std::string shorter = copy_of_good("shorter");
  std::filesystem::resize_file(shorter + "/0-0.bin", 8);  // the first case's output, cut short
  // An output that is a link to the reference's own (what a candidate that escaped screening
  // could make): refused, not read through.
  std::string linked = copy_of_good("linked");
  std::filesystem::remove(linked + "/0-0.bin");
  std::filesystem::create_symlink(expected + "/0-0.bin", linked + "/0-0.bin");
  std::string stride = copy_of_good("stride");
  {
    std::ifstream in(stride + "/manifest.json");
    std::stringstream s;
    s << in.rdbuf();
    nlohmann::json m = nlohmann::json::parse(s.str());
    for (auto& e : m["entries"])
      for (auto& p : e["perturb"]) p["stride"] = 2;  // not a stride the harness uses
    kf::testing::write_text(stride + "/manifest.json", m.dump());
  }

  std::string requests = "warm\tw\n";
  int n = 0;
  for (const std::string& dir : {text, shorter, stride, linked, good}) {
    std::string id = std::to_string(++n);
    requests += "check\tn" + id + "\tall\t" + dir + "\t" + root + "/r" + id + ".json\n";
  }
  std::istringstream in(requests);
  std::streambuf* old = std::cin.rdbuf(in.rdbuf());
  Twice judge;
  auto served = run_main(judge, suite(), args_with({"--ref", "--serve", "--expected", expected}));
  std::cin.rdbuf(old);
  ASSERT_EQ(served.exit_code, 0) << served.stdout_text;
  nlohmann::json r1 = read_json(root + "/r1.json"), r2 = read_json(root + "/r2.json"),
                 r3 = read_json(root + "/r3.json"), r4 = read_json(root + "/r4.json"),
                 r5 = read_json(root + "/r5.json");
  EXPECT_EQ(r1["status"], "wrong") << r1.dump();
  EXPECT_NE(r1["reason"].get<std::string>().find("no readable outputs"), std::string::npos);
  EXPECT_EQ(r2["status"], "wrong") << r2.dump();
  EXPECT_NE(r2["reason"].get<std::string>().find("different number of bytes"), std::string::npos)
      << r2["reason"];
  EXPECT_EQ(r3["status"], "wrong") << r3.dump();
  EXPECT_NE(r3["reason"].get<std::string>().find("stride"), std::string::npos) << r3["reason"];
  EXPECT_EQ(r4["status"], "wrong") << r4.dump();
  EXPECT_NE(r4["reason"].get<std::string>().find("is missing"), std::string::npos) << r4["reason"];
  EXPECT_EQ(r5["status"], "pass") << r5.dump();
  EXPECT_EQ(phase_seconds(r5, "check.setup"), 0.0) << r5["phase_seconds"];
}

TEST(JudgeServe, NeedsTheReferenceAndItsOutputs) {
  Twice p;
  auto r = run_main(p, suite(), {"--serve", "--expected", "/nonexistent"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.stdout_text.find("--serve judges candidates' outputs"), std::string::npos)
      << r.stdout_text;
}
