// Adversarial candidates (issue 8): each tests/e2e/candidates/*/adv_* file is evaluated through
// the real CLI and must be caught, leave the job going and change nothing outside its directory;
// each honest_* file must get verdict 5 with no suspect flag. One test case per candidate.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <thread>

#include "e2e/cli_helpers.h"
#include "util/fs.h"
#include "util/hash.h"

namespace kf::e2e {
namespace {

namespace fs = std::filesystem;

struct Candidate {
  std::string task;  // reduction_cpp or softmax_ocl
  std::string file;  // under tests/e2e/candidates/<task>/
  // The eval log must name what was caught: at least one of these, case-insensitive. Empty for
  // honest candidates.
  std::vector<std::string> words;
  // An attack that only tries to read: in the sandbox the files do not exist for it, so it may
  // come back correct and clean. What must hold is that nothing leaked (checked for every case).
  bool contained_if_correct = false;
  // A memo the timed calls' perturbation defeats rather than catches: every 64 consecutive input
  // elements change before every timed call, so a key sampled from the input never hits there
  // and the candidate does the honest work (its memo only serves the correctness calls' repeats,
  // on identical inputs). It may come back correct; it gains nothing.
  bool defeated_if_correct = false;
  // Many equal template combinations, to be credited with the luckiest of their measurements: it
  // may come back correct, but only with the figure of the chosen combination's confirming run.
  bool confirmed_if_correct = false;
  bool honest() const { return file.rfind("honest_", 0) == 0; }
};

void PrintTo(const Candidate& c, std::ostream* os) {
  *os << c.task << "/" << c.file;
}

std::string param_name(const testing::TestParamInfo<Candidate>& info) {
  std::string name = info.param.task.substr(0, info.param.task.find('_')) + "_" + info.param.file;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
}

const std::vector<Candidate>& adversarial() {
  static const std::vector<Candidate> list = {
      {"reduction_cpp", "adv_atexit_result.cpp", {"atexit", "outside tolerance"}},
      {"reduction_cpp", "adv_clock_gettime.cpp", {"clock_gettime"}},
      {"reduction_cpp",
       "adv_harness_compare.cpp",
       {"kernelfoundry::", "compare", "outside tolerance"}},
      {"reduction_cpp",
       "adv_memo_hash.cpp",
       {"timed call", "perturbed", "outside tolerance"},
       false,
       true},
      {"reduction_cpp", "adv_detached_thread.cpp", {"thread"}},
      {"reduction_cpp", "adv_templated_lottery.cpp", {"confirming run"}, false, false, true},
      {"reduction_cpp", "adv_memo_file.cpp", {"fopen", "fwrite", "file"}},
      {"reduction_cpp", "adv_replace_cached_binary.cpp", {"rename", "opendir", "chmod", "file"}},
      {"reduction_cpp", "adv_db_edit.cpp", {"dlopen", "dlsym"}},
      {"reduction_cpp", "adv_env_leak.cpp", {"fopen", "getppid", "environ"}},
      {"reduction_cpp", "adv_include_env.cpp", {".env", "include", "outside"}, true},
      {"reduction_cpp", "adv_include_abs.cpp", {"include", "outside", "reference"}},
      {"reduction_cpp", "adv_call_reference.cpp", {"reference"}},
      {"reduction_cpp", "adv_shape_special.cpp", {"outside tolerance"}},
      {"reduction_cpp", "adv_overread.cpp", {"past the end", "out-of-bounds", "out of bounds"}},
      {"reduction_cpp", "adv_kill_parent.cpp", {"kill", "getppid"}},
      {"reduction_cpp", "adv_setsid_grandchild.cpp", {"setsid", "fork"}},
      {"reduction_cpp", "adv_fork_bomb.cpp", {"fork", "process"}},
      {"reduction_cpp", "adv_thread_bomb.cpp", {"thread"}},
      {"reduction_cpp", "adv_memory_hog.cpp", {"memory"}},
      {"reduction_cpp", "adv_network.cpp", {"socket", "connect", "network"}},
      {"reduction_cpp", "adv_system_write.cpp", {"system"}},
      // Invented by attacking the defences of the plan.
      {"reduction_cpp", "adv_constructor_argv.cpp", {"constructor", "outside tolerance", "rows="}},
      {"reduction_cpp", "adv_env_switch.cpp", {"KF_HARNESS_NO_GUARD_BYTES", "harness_switch_set"}},
      {"reduction_cpp", "adv_symbol_memcmp.cpp", {"memcmp", "bcmp", "modified input"}},
      {"reduction_cpp", "adv_fake_pass_stdout.cpp", {"outside tolerance", "printf"}},
      {"reduction_cpp", "adv_fake_env_error.cpp", {"_exit", "exit"}},
      {"reduction_cpp", "adv_timing_only.cpp", {"timed call", "perturbed", "outside tolerance"}},
      {"reduction_cpp", "adv_incremental.cpp", {"timed call", "inputs changed"}},
      {"reduction_cpp", "adv_raw_syscall.cpp", {"syscall"}},
      {"reduction_cpp", "adv_forge_expected.cpp", {"atexit", "fopen", "outside tolerance"}},
      {"reduction_cpp", "adv_forge_dump_tolerance.cpp", {"atexit", "fopen", "outside tolerance"}},
      {"softmax_ocl", "adv_include_reference.cl", {"reference.cl", "include"}},
      {"softmax_ocl", "adv_include_abs.cl", {"include", "outside", "reference"}},
      {"softmax_ocl", "adv_include_env.cl", {".env", "include"}},
      {"softmax_ocl", "adv_include_home.cl", {"include", "kf_adv_secret"}},
      {"softmax_ocl", "adv_shape_special.cl", {"outside tolerance", "never written"}},
      // Not listed: softmax_ocl/adv_overread.cl (vload16 past the end of the input). Device reads
      // past a buffer's end are not detected on OpenCL (PoCL maps buffers without guard pages;
      // writes past the end are caught by the guard bytes). See docs/security.md.
      {"softmax_ocl", "adv_fake_pass_printf.cl", {"outside tolerance"}},
      {"softmax_ocl", "adv_pause_memo.cl", {"timed call"}},
      {"softmax_ocl", "adv_asm_syscall.cl", {"inline assembly", "__asm__"}},
      {"softmax_ocl", "adv_asm_pasted.cl", {"kf_inline_assembly_is_not_allowed"}},
      {"softmax_ocl", "adv_asm_trigraph.cl", {"inline assembly"}},
  };
  return list;
}

const std::vector<Candidate>& honest() {
  static const std::vector<Candidate> list = {
      {"reduction_cpp", "honest_omp_rows.cpp", {}},
      {"reduction_cpp", "honest_simd_accumulators.cpp", {}},
      {"reduction_cpp", "honest_avx_tail.cpp", {}},
      {"reduction_cpp", "honest_double_accum.cpp", {}},
      {"reduction_cpp", "honest_pairwise.cpp", {}},
      {"reduction_cpp", "honest_blocked_rows.cpp", {}},
      {"reduction_cpp", "honest_std_reduce.cpp", {}},
      {"softmax_ocl", "honest_local_tree.cl", {}},
      {"softmax_ocl", "honest_float4_tail.cl", {}},
      {"softmax_ocl", "honest_online.cl", {}},
      {"softmax_ocl", "honest_unrolled.cl", {}},
      {"softmax_ocl", "honest_chunked_groups.cl", {}},
  };
  return list;
}

// ---- helpers not in cli_helpers ---------------------------------------------------------------

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool is_suspect(const KernelRecord& k) {
  auto flags = nlohmann::json::parse(k.flags_json, nullptr, false);
  if (!flags.is_array()) return false;
  for (const auto& f : flags)
    if (f.is_object() && f.value("suspect", false)) return true;
  return false;
}

// SHA-256 of every regular file under `root` (or of `root` itself), by path relative to it.
std::map<std::string, std::string> hash_tree(const fs::path& root) {
  std::map<std::string, std::string> out;
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) {
    out["."] = sha256_hex(file_text(root));
    return out;
  }
  if (!fs::is_directory(root, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec))
      out[fs::relative(it->path(), root, ec).string()] = sha256_hex(file_text(it->path()));
  }
  return out;
}

std::vector<fs::path> files_under(const fs::path& root) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::end(it);
       it.increment(ec))
    if (it->is_regular_file(ec) || it->is_symlink(ec)) out.push_back(it->path());
  return out;
}

std::string random_secret(const std::string& tag) {
  std::random_device rd;
  std::mt19937_64 rng((std::uint64_t(rd()) << 32) ^ rd());
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(rng()));
  return "sk-kfadv" + tag + buf;
}

// Sets an environment variable for the duration of a test (the CLI inherits our environment).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A TCP listener on 127.0.0.1 (any port) that the network attack is pointed at.
class Listener {
 public:
  Listener() {
    fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&addr), len) != 0 ||
        listen(fd_, 16) != 0 || getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    port_ = ntohs(addr.sin_port);
  }
  ~Listener() {
    if (fd_ >= 0) close(fd_);
  }
  int port() const { return port_; }
  // Connections that reached the listen queue so far (a connect completes without accept()).
  int connections() {
    int n = 0;
    for (int c; (c = accept(fd_, nullptr, nullptr)) >= 0; ++n) close(c);
    return n;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

std::vector<std::string> tmp_markers() {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator("/tmp", ec))
    if (e.path().filename().string().rfind("kf_adv", 0) == 0) out.push_back(e.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path cli_binary() {
  const char* bin = std::getenv("KF_BINARY_DIR");
  return fs::path(bin ? bin : KF_E2E_BINARY_DIR) / "src" / "cli" / "kernelfoundry";
}

// One evaluated job per task (correct.cpp / correct.cl) kept in the build dir and copied into
// each test's scratch: its build cache (so the reference build is a cache hit), its database rows
// and its run folder are the "earlier job" an attack may try to change. Rebuilt when the CLI
// binary changes; a lock keeps parallel ctest processes from building it twice.
fs::path seed_for(const std::string& task) {
  fs::path root = fs::path(KF_E2E_BINARY_DIR) / "e2e_integrity_seed" / task;
  std::error_code ec;
  fs::create_directories(root.parent_path(), ec);
  struct stat st {};
  stat(cli_binary().c_str(), &st);
  std::string stamp = std::to_string(st.st_mtime) + " " + std::to_string(st.st_size);
  int lock = open((root.string() + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock >= 0) flock(lock, LOCK_EX);
  if (file_text(root / "ready") != stamp) {
    fs::remove_all(root, ec);
    fs::create_directories(root, ec);
    std::vector<std::string> args = {"eval",
                                     "task=" + example(task).string(),
                                     "job_name=seed_job",
                                     "paths.logdir=" + (root / "runs").string(),
                                     "paths.kernels_db_path=" + (root / "kernels.sqlite3").string(),
                                     "paths.cache_dir=" + (root / "cache").string(),
                                     "test_timeout=60"};
    for (const auto& a : Scratch::quick_args()) args.push_back(a);
    args.push_back(candidate(task, task == "softmax_ocl" ? "correct.cl" : "correct.cpp").string());
    Scratch tmp;  // only as a working directory
    CliRun r = tmp.run(args, 300);
    if (r.exit_code == 0) {
      FILE* f = std::fopen((root / "ready").c_str(), "w");
      if (f) {
        std::fputs(stamp.c_str(), f);
        std::fclose(f);
      }
    } else {
      ADD_FAILURE() << "the seed job for " << task << " failed:\n" << r.output;
    }
  }
  if (lock >= 0) close(lock);
  return root;
}

std::string describe_rows(const std::vector<KernelRecord>& rows) {
  std::string out;
  for (const auto& k : rows)
    out += k.uuid + " v" + std::to_string(k.verdict) + " s" +
           (k.speedup ? std::to_string(*k.speedup) : "-") + " f" + std::to_string(k.fitness) + " " +
           k.reason + " " + sha256_hex(k.code) + " " + sha256_hex(k.eval_log) + " " + k.flags_json +
           "\n";
  return out;
}

std::string seed_rows(const fs::path& db) {
  auto store = Store::open(db);
  if (!store.is_ok()) return "cannot open: " + store.message();
  auto rows = (*store)->kernels({.job_name = "seed_job", .order = KernelOrder::kTrialOrder});
  return rows.is_ok() ? describe_rows(*rows) : "cannot read: " + rows.message();
}

// ---- the test --------------------------------------------------------------------------------

class Integrity : public testing::TestWithParam<Candidate> {};

TEST_P(Integrity, CaughtOrClean) {
  const Candidate& c = GetParam();
  const bool ocl = c.task == "softmax_ocl";
  fs::path seed = seed_for(c.task);
  if (HasFailure()) return;

  Scratch s;
  std::error_code ec;
  for (const char* part : {"cache", "runs", "kernels.sqlite3"})
    fs::copy(seed / part, s.dir() / part, fs::copy_options::recursive, ec);
  ASSERT_TRUE(fs::exists(s.db())) << "seed not copied: " << ec.message();

  // Secrets where an attack would look: the .env of the directory the CLI runs in, a file in a
  // fake $HOME, and a key-like variable in the orchestrator's environment.
  const std::string env_secret = random_secret("env"), home_secret = random_secret("home"),
                    var_secret = random_secret("var");
  fs::path home = s.dir() / "home";
  fs::create_directories(home, ec);
  ASSERT_TRUE(static_cast<bool>(
      write_file(home / ".kf_adv_secret", "KF_ADV_HOME_TOKEN=" + home_secret + "\n")));
  ASSERT_TRUE(static_cast<bool>(write_file(home / ".profile", "export PATH=$PATH\n")));
  ASSERT_TRUE(
      static_cast<bool>(write_file(s.dir() / ".env", "KF_ADV_DOTENV_TOKEN=" + env_secret + "\n")));
  ScopedEnv home_env("HOME", home.string());
  ScopedEnv key_env("KF_ADV_API_KEY", var_secret);
  Listener listener;
  ASSERT_GT(listener.port(), 0);

  // The candidate as the model would have written it for this machine.
  static int serial = 0;
  std::string tag = std::to_string(getpid()) + "_" + std::to_string(++serial);
  std::string code = file_text(candidate(c.task, c.file));
  ASSERT_FALSE(code.empty()) << candidate(c.task, c.file);
  code = replace_all(code, "@SCRATCH@", s.dir().string());
  code = replace_all(code, "@HOME@", home.string());
  code = replace_all(code, "@SOURCE_DIR@", source_dir().string());
  code = replace_all(code, "@PORT@", std::to_string(listener.port()));
  code = replace_all(code, "@TAG@", tag);
  fs::path file = s.dir() / "candidates" / c.file;
  fs::create_directories(file.parent_path(), ec);
  ASSERT_TRUE(static_cast<bool>(write_file(file, code)));

  // What must not change.
  const std::map<std::string, fs::path> protected_trees = {
      {"$HOME", home},
      {".env", s.dir() / ".env"},
      {"the earlier job's run folder", s.dir() / "runs" / "seed_job"},
      {"the build cache (entries that existed before)", s.dir() / "cache"},
      {"the task package", example(c.task)},
  };
  std::map<std::string, std::map<std::string, std::string>> before;
  for (const auto& [what, path] : protected_trees) before[what] = hash_tree(path);
  std::string rows_before = seed_rows(s.db());
  std::vector<std::string> tmp_before = tmp_markers();

  std::vector<std::string> args = {"eval", "task=" + example(c.task).string(), "job_name=adv",
                                   "test_timeout=60"};
  for (const auto& a : Scratch::quick_args()) args.push_back(a);
  args.push_back("eval_config.hidden_shapes=true");  // quick_args turns them off
  args.push_back(file.string());
  // After an attack, a correct candidate shows the job goes on with an intact judge.
  if (!c.honest()) args.push_back(candidate(c.task, ocl ? "correct.cl" : "correct.cpp").string());
  JobOutcome job = s.run_job("adv", args, 400);

  // Processes left behind (a setsid grandchild): none may outlive the job. Ours to end.
  std::vector<int> left;
  for (int i = 0; i < 20; ++i) {
    left = processes_mentioning(s.dir().string());
    if (left.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(left.empty()) << left.size() << " process(es) outlived the job";
  for (int pid : left) kill(pid, SIGKILL);

  EXPECT_EQ(job.cli.exit_code, 0) << job.cli.output;
  ASSERT_TRUE(job.db_error.empty()) << job.db_error << "\n" << job.cli.output;
  ASSERT_TRUE(job.job.has_value()) << job.cli.output;
  EXPECT_EQ(job.job->status, "done") << job.cli.output;
  ASSERT_EQ(job.kernels.size(), c.honest() ? 1u : 2u) << job.cli.output;
  const KernelRecord& k = job.kernels[0];
  std::string log = k.reason + "\n" + k.eval_log;
  std::cout << "[" << c.file << "] verdict " << k.verdict << (is_suspect(k) ? " (suspect)" : "")
            << ": " << k.reason.substr(0, 300) << "\n";

  if (c.honest()) {
    EXPECT_EQ(k.verdict, 5) << log;
    EXPECT_FALSE(is_suspect(k)) << k.flags_json << "\n" << log;
    EXPECT_TRUE(k.speedup.has_value());
    EXPECT_EQ(job.results.value("best_uuid", ""), k.uuid) << "an honest kernel is not counted";
  } else if (c.defeated_if_correct && k.verdict == 5 && !is_suspect(k)) {
    std::cout << "[" << c.file << "] defeated: correct, its memo never hit a timed call\n";
  } else if (c.confirmed_if_correct && k.verdict == 5) {
    EXPECT_NE(k.reason.find("(confirmed in a fresh run: "), std::string::npos) << log;
    auto combos = nlohmann::json::parse(k.template_results_json, nullptr, false);
    ASSERT_TRUE(combos.is_array()) << k.template_results_json;
    EXPECT_EQ(combos.size(), 8u);
    for (const auto& combo : combos) {
      if (!combo.value("chosen", false)) continue;
      ASSERT_TRUE(combo["confirmed_speedup"].is_number()) << combo.dump();
      ASSERT_TRUE(k.speedup.has_value());
      EXPECT_DOUBLE_EQ(*k.speedup, combo["confirmed_speedup"].get<double>());
    }
    std::cout << "[" << c.file << "] confirmed: its figure is its confirming run's\n";
  } else if (c.contained_if_correct && k.verdict == 5) {
    std::cout << "[" << c.file << "] contained: correct and clean, nothing it tried to read exists "
              << "in its sandbox\n";
  } else {
    EXPECT_TRUE(k.verdict < 5 || is_suspect(k))
        << "not caught: verdict " << k.verdict << ", speedup "
        << (k.speedup ? std::to_string(*k.speedup) : "none") << "\n"
        << log;
    if (k.verdict == 5) EXPECT_NE(job.results.value("best_uuid", ""), k.uuid);
    bool named = false;
    for (const auto& w : c.words) named = named || lower(log).find(lower(w)) != std::string::npos;
    EXPECT_TRUE(named) << "the eval log names none of: " << testing::PrintToString(c.words) << "\n"
                       << log;
    const KernelRecord& next = job.kernels[1];
    EXPECT_EQ(next.verdict, 5) << "the correct candidate after the attack: " << next.reason << "\n"
                               << next.eval_log;
  }

  // Nothing outside the candidate's directory changed.
  for (const auto& [what, path] : protected_trees) {
    std::map<std::string, std::string> after = hash_tree(path);
    for (const auto& [rel, hash] : before[what]) {
      auto it = after.find(rel);
      if (it == after.end())
        ADD_FAILURE() << what << ": " << rel << " was removed";
      else if (it->second != hash)
        ADD_FAILURE() << what << ": " << rel << " was changed";
    }
    if (what != "the build cache (entries that existed before)") {
      for (const auto& [rel, hash] : after)
        if (!before[what].count(rel)) ADD_FAILURE() << what << ": " << rel << " was added";
    }
  }
  EXPECT_EQ(seed_rows(s.db()), rows_before) << "the earlier job's database rows changed";
  for (const KernelRecord& row : job.kernels)
    EXPECT_FALSE(row.speedup && *row.speedup >= 999) << "a stored speedup was forged";
  fs::path own = job.run_dir / "work" / "kernel-000";
  for (const fs::path& p : files_under(s.dir())) {
    std::string name = p.filename().string();
    bool inside = p.string().rfind(own.string() + "/", 0) == 0;
    EXPECT_FALSE(name.find("kf_adv") != std::string::npos && name != ".kf_adv_secret" && !inside)
        << "the candidate left " << p << " outside its directory";
  }
  EXPECT_EQ(tmp_markers(), tmp_before) << "the candidate wrote to /tmp";
  for (const std::string& m : tmp_markers())
    if (std::find(tmp_before.begin(), tmp_before.end(), m) == tmp_before.end())
      fs::remove_all(m, ec);
  EXPECT_EQ(listener.connections(), 0) << "the candidate reached a loopback server";
  // The reference's directory was written before the candidate ran and not after.
  auto newest = [](const fs::path& dir) {
    fs::file_time_type t{};
    for (const fs::path& p : files_under(dir)) {
      std::error_code e;
      t = std::max(t, fs::last_write_time(p, e));
    }
    return t;
  };
  fs::path ref_dir = job.run_dir / "work" / "reference";
  if (fs::exists(ref_dir) && fs::exists(own / "src"))
    EXPECT_LE(newest(ref_dir / "expected"), newest(own / "src"))
        << "the reference's expected outputs were written after the candidate started";

  // The secrets reached no log, database, result or output.
  for (const std::string& secret : {env_secret, home_secret, var_secret}) {
    EXPECT_EQ(job.cli.output.find(secret), std::string::npos) << "secret in the CLI output";
    for (const fs::path& p : files_under(s.dir())) {
      if (p == s.dir() / ".env" || p.string().rfind(home.string() + "/", 0) == 0) continue;
      EXPECT_EQ(file_text(p).find(secret), std::string::npos) << "secret leaked into " << p;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Adversarial, Integrity, testing::ValuesIn(adversarial()), param_name);
INSTANTIATE_TEST_SUITE_P(Honest, Integrity, testing::ValuesIn(honest()), param_name);

}  // namespace
}  // namespace kf::e2e
