// The paced benchmark (pace.h): the candidate child times exactly the batches the evaluator asks
// for, shape by shape, and reports each batch's samples; the judge (--serve) times batches of the
// reference on request. Together they give a speedup measured side by side.
#include "harness/pace.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <set>
#include <sstream>

#include "harness/dump.h"
#include "harness/test_util.h"
#include "kernelfoundry/harness.h"

namespace kf = kernelfoundry;

namespace {

struct Twice : kf::Problem {
  void setup(kf::Case& c) override {
    long n = c.dim("n");
    c.input("x", kf::f32, n, kf::uniform(-1, 1));
    c.output("y", kf::f32, n, kf::tolerance(1e-6, 1e-6));
  }
  void run(kf::Case& c, kf::Impl) override {
    long n = c.dim("n");
    const float* x = c.buffer("x").host<float>();
    float* y = c.buffer("y").host<float>();
    for (long i = 0; i < n; ++i) y[i] = x[i] * 2;
  }
};

// Twice, noting where its input lies at every call (to a file: the candidate's child is forked).
struct WhereTwice : Twice {
  std::string log;
  void run(kf::Case& c, kf::Impl impl) override {
    Twice::run(c, impl);
    std::ofstream(log, std::ios::app)
        << static_cast<const void*>(c.buffer("x").host<float>()) << ' ' << c.dim("n") << '\n';
  }
};

// The places logged for shape n, in call order.
std::vector<std::string> places(const std::string& log, long n) {
  std::ifstream in(log);
  std::vector<std::string> out;
  std::string where;
  for (long shape; in >> where >> shape;)
    if (shape == n) out.push_back(where);
  return out;
}

kf::Suite suite() {
  kf::Suite s;
  s.backend = kf::Backend::Host;
  s.correctness = {{{"n", 7}}};
  s.benchmarks = {kf::benchmark("twice", {{{"n", 4096}}, {{"n", 5000}}})};
  return s;
}

std::vector<std::string> split(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The evaluator's ends of the two FIFOs, opened before the child as the evaluator opens them.
struct Channel {
  int in = -1, out = -1;  // we write `in` (the child's --pace-in), read `out`
  std::string buffered;

  bool line(std::string* text, int timeout_ms = 20000) {
    while (true) {
      std::size_t nl = buffered.find('\n');
      if (nl != std::string::npos) {
        *text = buffered.substr(0, nl);
        buffered.erase(0, nl + 1);
        return true;
      }
      pollfd p{out, POLLIN, 0};
      if (::poll(&p, 1, timeout_ms) <= 0) return false;
      char buf[4096];
      ssize_t n = ::read(out, buf, sizeof buf);
      if (n <= 0) return false;  // the child closed its end
      buffered.append(buf, std::size_t(n));
    }
  }
  void send(const std::string& text) {
    std::string l = text + "\n";
    ASSERT_EQ(::write(in, l.data(), l.size()), ssize_t(l.size()));
  }
};

// A candidate child (forked, as the evaluator starts one) running the paced benchmark, with the
// evaluator's ends of its two FIFOs opened first, as the evaluator opens them.
struct PacedChild {
  Channel ch;
  pid_t pid = -1;
  std::string result;
  std::string dump;  // the --dump-dir: the outputs handed to the checker
};

PacedChild start_paced_child(const std::string& log = "") {
  PacedChild c;
  std::string dir = kf::testing::make_temp_dir();
  std::string in_path = dir + "/pace.in", out_path = dir + "/pace.out";
  EXPECT_EQ(::mkfifo(in_path.c_str(), 0600), 0);
  EXPECT_EQ(::mkfifo(out_path.c_str(), 0600), 0);
  c.ch.in = ::open(in_path.c_str(), O_RDWR | O_CLOEXEC);
  c.ch.out = ::open(out_path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  EXPECT_GE(c.ch.in, 0);
  EXPECT_GE(c.ch.out, 0);
  c.result = dir + "/result.json";
  c.dump = dir + "/outputs";
  c.pid = ::fork();
  EXPECT_GE(c.pid, 0);
  if (c.pid == 0) {
    int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    WhereTwice p;
    p.log = log.empty() ? "/dev/null" : log;
    std::vector<std::string> args = kf::testing::quick_benchmark_args();
    args.insert(args.end(), {"--seeds", "1", "--out", c.result, "--dump-dir", c.dump, "--pace-in",
                             in_path, "--pace-out", out_path});
    kf::testing::run_main(p, suite(), args);
    ::_exit(99);
  }
  return c;
}

// Waits for the child; its exit code (-1 when it did not exit normally) and result file.
int finish(PacedChild& c, nlohmann::json* result) {
  int status = 0;
  EXPECT_EQ(::waitpid(c.pid, &status, 0), c.pid);
  ::close(c.ch.in);
  ::close(c.ch.out);
  std::ifstream f(c.result);
  std::stringstream text;
  text << f.rdbuf();
  *result = nlohmann::json::parse(text.str(), nullptr, false);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The reference's expected outputs written under `root`, as the job does before its judge starts;
// the judge's arguments (--serve over them) in *args.
void prepare_judge(const std::string& root, std::vector<std::string>* args) {
  std::string expected = root + "/expected";
  *args = kf::testing::quick_benchmark_args();
  args->insert(args->end(), {"--seeds", "1"});
  Twice ref;
  std::vector<std::string> write_args = *args;
  write_args.insert(write_args.end(), {"--ref", "--expected-out", expected});
  ASSERT_EQ(kf::testing::run_main(ref, suite(), write_args).exit_code, 0);
  args->insert(args->end(), {"--ref", "--serve", "--expected", expected});
}

}  // namespace

TEST(Pace, CommandsAndLines) {
  EXPECT_EQ(kf::parse_pace_command("next").kind, kf::PaceCommand::Kind::Next);
  kf::PaceCommand go = kf::parse_pace_command("go 17");
  EXPECT_EQ(go.kind, kf::PaceCommand::Kind::Go);
  EXPECT_EQ(go.calls, 17);
  for (const char* bad : {"go 0", "go -3", "go 17x", "go", "stop", "go 100001", ""})
    EXPECT_EQ(kf::parse_pace_command(bad).kind, kf::PaceCommand::Kind::Error) << bad;
  kf::PaceCommand abort = kf::parse_pace_command("abort the reference failed");
  EXPECT_EQ(abort.kind, kf::PaceCommand::Kind::Error);
  EXPECT_NE(abort.error.find("ended the paced benchmark: the reference failed"), std::string::npos);
  EXPECT_EQ(kf::pace_line("abc", "n=4", 2, 0.5, {1.25, 2}), "kf-pace abc n=4 2 0.5 1.25 2");
}

TEST(Pace, TheCandidateTimesExactlyTheBatchesItIsGiven) {
  PacedChild child = start_paced_child();
  ASSERT_GT(child.pid, 0);
  Channel& ch = child.ch;
  const std::string nonce = "0123456789abcdef";
  ch.send("nonce " + nonce);
  std::string line;
  // Shape 1: batches of 3 and 2 calls.
  ASSERT_TRUE(ch.line(&line));
  std::vector<std::string> w = split(line);
  ASSERT_EQ(w.size(), 5u) << line;
  EXPECT_EQ(w[0], "kf-pace");
  EXPECT_EQ(w[1], nonce);
  EXPECT_EQ(w[2], "n=4096");
  EXPECT_EQ(w[3], "0");
  EXPECT_GT(std::stod(w[4]), 0) << "the warm-up's estimate";
  std::vector<double> said;
  ch.send("go 3");
  ASSERT_TRUE(ch.line(&line));
  w = split(line);
  ASSERT_EQ(w.size(), 8u) << line;
  EXPECT_EQ(w[3], "1");
  for (std::size_t i = 5; i < w.size(); ++i) said.push_back(std::stod(w[i]));
  ch.send("go 2");
  ASSERT_TRUE(ch.line(&line));
  w = split(line);
  ASSERT_EQ(w.size(), 7u) << line;
  EXPECT_EQ(w[3], "2");
  for (std::size_t i = 5; i < w.size(); ++i) said.push_back(std::stod(w[i]));
  ch.send("next");
  // Shape 2: one batch of 4.
  ASSERT_TRUE(ch.line(&line));
  w = split(line);
  ASSERT_GE(w.size(), 4u) << line;
  EXPECT_EQ(w[2], "n=5000");
  EXPECT_EQ(w[3], "0");
  ch.send("go 4");
  ASSERT_TRUE(ch.line(&line));
  EXPECT_EQ(split(line).size(), 9u) << line;
  ch.send("next");
  ASSERT_TRUE(ch.line(&line));
  EXPECT_EQ(line, "kf-pace " + nonce + " done");

  nlohmann::json r;
  EXPECT_EQ(finish(child, &r), 0);
  ASSERT_TRUE(r.is_object());
  // Exactly the asked-for samples, in order, as said on the channel; the stop is the evaluator's.
  ASSERT_EQ(r["timings"]["n=4096"].size(), 5u) << r["timings"];
  for (std::size_t i = 0; i < said.size(); ++i)
    EXPECT_NEAR(r["timings"]["n=4096"][i].get<double>(), said[i], 1e-6 * said[i] + 1e-12);
  EXPECT_EQ(r["timings"]["n=5000"].size(), 4u);
  EXPECT_EQ(r["stats"]["n=4096"]["stop"], "paced");
}

TEST(Pace, ABadAnswerEndsTheRunWithAReason) {
  PacedChild child = start_paced_child();
  ASSERT_GT(child.pid, 0);
  child.ch.send("nonce 0123456789abcdef");
  std::string line;
  ASSERT_TRUE(child.ch.line(&line));
  child.ch.send("run everything");
  nlohmann::json r;
  EXPECT_GT(finish(child, &r), 0);
  ASSERT_TRUE(r.is_object());
  EXPECT_NE(r["reason"].get<std::string>().find("neither 'go K' nor 'next'"), std::string::npos)
      << r["reason"];
}

TEST(Pace, TheJudgeTimesTheReferenceOnRequest) {
  std::string root = kf::testing::make_temp_dir();
  std::vector<std::string> args;
  prepare_judge(root, &args);
  if (::testing::Test::HasFatalFailure()) return;

  std::istringstream requests(
      "time\tt1\tn=4096\t5\n"
      "time\tt2\tn=4096\t3\n"
      "time\tt3\tn=99\t2\n"
      "time\tt4\tn=4096\tmany\n");
  std::streambuf* old = std::cin.rdbuf(requests.rdbuf());
  Twice judge;
  auto served = kf::testing::run_main(judge, suite(), args);
  std::cin.rdbuf(old);
  EXPECT_EQ(served.exit_code, 0) << served.stdout_text;
  std::istringstream out(served.stdout_text);
  std::vector<std::vector<std::string>> samples;
  std::vector<std::string> ends;
  for (std::string line; std::getline(out, line);) {
    if (line.rfind("kf-samples", 0) == 0) samples.push_back(split(line));
    if (line.rfind("kf-judge-done", 0) == 0) ends.push_back(line);
  }
  ASSERT_EQ(samples.size(), 2u) << served.stdout_text;
  EXPECT_EQ(samples[0].size(), 6u);  // the word and 5 samples
  EXPECT_EQ(samples[1].size(), 4u);
  for (const auto& s : samples)
    for (std::size_t i = 1; i < s.size(); ++i) EXPECT_GT(std::stod(s[i]), 0);
  ASSERT_EQ(ends.size(), 4u) << served.stdout_text;
  EXPECT_EQ(ends[0], "kf-judge-done t1 0");
  EXPECT_EQ(ends[1], "kf-judge-done t2 0");
  EXPECT_EQ(ends[2], "kf-judge-done t3 2");
  EXPECT_EQ(ends[3], "kf-judge-done t4 2");
  EXPECT_NE(served.stdout_text.find("'n=99' is not a benchmark shape"), std::string::npos);
  EXPECT_NE(served.stdout_text.find("CALLS 'many'"), std::string::npos);
}

// Where placement moves a kernel's time (CUDA), each batch after the probe runs on buffers placed
// anew, on both sides; forced here (the host backend asks for it too). The
// moved buffers keep their data: the run ends clean (inputs' checksums and guards intact, the
// checked call right).
TEST(Pace, BuffersMoveBetweenBatchesWhereTheDeviceAsks) {
  for (bool moved : {true, false}) {
    SCOPED_TRACE(moved ? "moved" : "kept");
    std::string log = kf::testing::make_temp_dir() + "/places.txt";
    ::setenv("KF_HARNESS_MOVE_BUFFERS", moved ? "1" : "0", 1);
    PacedChild child = start_paced_child(log);
    ::unsetenv("KF_HARNESS_MOVE_BUFFERS");
    ASSERT_GT(child.pid, 0);
    Channel& ch = child.ch;
    const std::string nonce = "0123456789abcdef";
    ch.send("nonce " + nonce);
    std::string line;
    for (const char* shape : {"n=4096", "n=5000"}) {
      for (const char* cmd : {"go 2", "go 3", "go 3"}) {
        ASSERT_TRUE(ch.line(&line));
        EXPECT_NE(line.find(shape), std::string::npos) << line;
        ch.send(cmd);
      }
      ASSERT_TRUE(ch.line(&line));
      ch.send("next");
    }
    ASSERT_TRUE(ch.line(&line));
    EXPECT_EQ(line, "kf-pace " + nonce + " done");
    nlohmann::json r;
    EXPECT_EQ(finish(child, &r), 0) << r;
    // The timed calls (2 + 3 + 3) come last but one (the call on fresh inputs after the timing
    // follows): the probe's on the warm-up's place, then, moved, a new place per batch.
    std::vector<std::string> at = places(log, 4096);
    ASSERT_GE(at.size(), 9u);
    std::vector<std::string> timed(at.end() - 9, at.end() - 1);
    EXPECT_EQ(timed[0], timed[1]);
    EXPECT_EQ(timed[2] != timed[1], moved) << "the second batch's place";
    EXPECT_EQ(timed[2], timed[4]);
    EXPECT_EQ(timed[5] != timed[4], moved) << "the third batch's place";
    EXPECT_EQ(timed[5], timed[7]);
    // The checker gets, per shape, one timed call of each poison variant among the first calls of
    // the batches, moved or not (post-8 and post-6 share a variant, post-3 has the other), and one
    // of each among the others: a memo keyed on the pointers, or on the pause before a batch,
    // computes honestly on the first and cheats on the rest.
    std::vector<kf::DumpEntry> entries;
    std::string err;
    ASSERT_TRUE(kf::read_dump(child.dump, &entries, &err)) << err;
    for (const char* shape : {"n=4096", "n=5000"}) {
      int post = 0;
      std::set<int> timed_calls;
      std::set<int> variants;
      for (const kf::DumpEntry& e : entries) {
        if (e.shape.id() != shape) continue;
        if (e.kind == "post") post = e.call;
        if (e.kind != "timed") continue;
        timed_calls.insert(e.call);
        variants.insert(e.variant);
      }
      ASSERT_GT(post, 9) << shape;
      EXPECT_EQ(timed_calls.size(), 4u) << shape;
      EXPECT_EQ(variants.size(), 2u) << shape;
      // Calls post-8 .. post-1 were timed: batches of 2, 3 and 3.
      for (int call : timed_calls)
        EXPECT_TRUE(call >= post - 8 && call < post) << shape << " " << call;
      EXPECT_EQ(timed_calls.count(post - 8) + timed_calls.count(post - 6), 1u)
          << shape << ": one of batch 1's and batch 2's first calls is checked";
      EXPECT_EQ(timed_calls.count(post - 3), 1u) << shape << ": batch 3's first call not checked";
    }
  }
}

TEST(Pace, TheJudgeMovesTheReferencesBuffersBetweenRequestsWhereTheDeviceAsks) {
  std::string root = kf::testing::make_temp_dir();
  std::vector<std::string> args;
  prepare_judge(root, &args);
  if (::testing::Test::HasFatalFailure()) return;
  for (bool moved : {false, true}) {
    std::istringstream requests("time\tt1\tn=4096\t2\ntime\tt2\tn=4096\t3\ntime\tt3\tn=4096\t3\n");
    std::streambuf* old = std::cin.rdbuf(requests.rdbuf());
    WhereTwice judge;
    judge.log = root + (moved ? "/moved.txt" : "/kept.txt");
    ::setenv("KF_HARNESS_MOVE_BUFFERS", moved ? "1" : "0", 1);
    auto served = kf::testing::run_main(judge, suite(), args);
    ::unsetenv("KF_HARNESS_MOVE_BUFFERS");
    std::cin.rdbuf(old);
    EXPECT_EQ(served.exit_code, 0) << served.stdout_text;
    std::vector<std::string> at = places(judge.log, 4096);
    ASSERT_GE(at.size(), 8u) << served.stdout_text;
    std::vector<std::string> timed(at.end() - 8, at.end());
    // Kept, one place throughout; moved, each request runs somewhere else than the last.
    EXPECT_EQ(timed[0], timed[1]);
    EXPECT_EQ(timed[2], timed[4]);
    EXPECT_EQ(timed[5], timed[7]);
    EXPECT_EQ(timed[2] != timed[1], moved) << served.stdout_text;
    EXPECT_EQ(timed[5] != timed[4], moved) << served.stdout_text;
  }
}

// Without a judge (no pacing) the benchmark moves the buffers every 8 timed calls only when the
// switch asks (it checks only its last call, which must not be a pointer-keyed memo's honest
// first call on a new place); never in a profiling run, where the moves' page faults would read
// as the kernel's.
TEST(Pace, TheStandaloneBenchmarkMovesTheBuffersEveryEightCalls) {
  std::string root = kf::testing::make_temp_dir();
  struct Case {
    const char* env;
    bool profiled, moved;
  };
  for (Case c : {Case{"0", false, false}, Case{"1", false, true}, Case{"", false, false},
                 Case{"1", true, false}}) {
    std::string name = std::string(*c.env ? c.env : "device") + (c.profiled ? "_perf" : "");
    WhereTwice twice;
    twice.log = root + "/places_" + name + ".txt";
    std::vector<std::string> args = {"--phase",
                                     "benchmark",
                                     "--min-samples",
                                     "20",
                                     "--max-samples",
                                     "20",
                                     "--time-budget",
                                     "30",
                                     "--warmup-time",
                                     "0",
                                     "--warmup-iters",
                                     "1",
                                     "--warm",
                                     "--seeds",
                                     "1"};
    if (c.profiled) {  // FIFOs that do not exist: the window says so and the run goes on
      args.push_back("--perf-control");
      args.push_back(root + "/no_ctl," + root + "/no_ack");
    }
    if (*c.env) ::setenv("KF_HARNESS_MOVE_BUFFERS", c.env, 1);
    auto r = kf::testing::run_main(twice, suite(), args);
    ::unsetenv("KF_HARNESS_MOVE_BUFFERS");
    EXPECT_EQ(r.exit_code, 0) << r.stdout_text;
    std::vector<std::string> at = places(twice.log, 5000);
    ASSERT_GE(at.size(), 20u) << r.stdout_text;
    std::vector<std::string> timed(at.end() - 20, at.end());
    for (int k = 1; k < 20; ++k) {
      bool new_place = timed[k] != timed[k - 1];
      EXPECT_EQ(new_place, c.moved && k % 8 == 0) << "timed call " << k << ", case " << name;
    }
  }
}
