// The replay client: answers recorded in a folder (*.md, *.txt; t<trial>_b<branch>.md pinned to
// a call; feedback/ for feedback calls) or in a past job of the kernel database. No network.
#include <algorithm>
#include <atomic>
#include <map>

#include "infer/clients.h"
#include "store/store.h"
#include "util/fs.h"
#include "util/strings.h"

namespace kf {

namespace {

struct Recorded {
  std::string text, model;
  std::string finish_reason = "stop";
};

// The answers of one folder, in name order, plus lookup by file name.
struct AnswerFolder {
  std::vector<std::string> names;
  std::map<std::string, std::string> texts;  // file name -> content
  std::atomic<uint64_t> next{0};             // answers handed out so far
};

Status load_folder(const fs::path& dir, AnswerFolder& out) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string ext = to_lower(entry.path().extension().string());
    if (!entry.is_regular_file(ec) || (ext != ".md" && ext != ".txt")) continue;
    auto text = read_file(entry.path());
    if (!text) return text.status();
    std::string name = entry.path().filename().string();
    out.names.push_back(name);
    out.texts[name] = std::move(text.value());
  }
  if (ec) return Status::error("cannot list " + dir.string() + ": " + ec.message());
  std::sort(out.names.begin(), out.names.end());
  return Status::ok();
}

class ReplayClient : public LlmClient {
 public:
  explicit ReplayClient(ServerConfig server) : server_(std::move(server)) {}

  const ServerConfig& server() const override { return server_; }

  // Folder mode.
  Status load(const fs::path& dir) {
    dir_ = dir;
    KF_RETURN_IF_ERROR(load_folder(dir, generate_));
    if (generate_.names.empty())
      return Status::error(server_.where + ".replay_path: no recorded answers (*.md, *.txt) in " +
                           dir.string() + "; record one answer per file there, or use job:<name>");
    std::error_code ec;
    if (fs::is_directory(dir / "feedback", ec))
      KF_RETURN_IF_ERROR(load_folder(dir / "feedback", feedback_));
    return Status::ok();
  }

  // Job mode.
  Status load_job(const std::string& job_name, Store& store) {
    job_name_ = job_name;
    auto kernels =
        store.kernels(KernelFilter{.job_name = job_name, .order = KernelOrder::kTrialOrder});
    if (!kernels) return kernels.status();
    for (const KernelRecord& k : kernels.value()) {
      if (k.answer.empty()) continue;  // not an LLM answer (e.g. iteration 0)
      Recorded r{k.answer, k.model};
      if (!k.finish_reason.empty()) r.finish_reason = k.finish_reason;
      by_call_.emplace(std::make_pair(k.trial, k.branch), std::move(r));
    }
    if (by_call_.empty())
      return Status::error(server_.where + ".replay_path: job " + job_name +
                           " has no recorded LLM answers in " + store.path().string() +
                           "; check the job name (job:<job_name> names a job stored there)");
    return Status::ok();
  }

  Result<std::vector<LlmAnswer>> complete(const LlmRequest& request) override {
    auto start = std::chrono::steady_clock::now();
    std::vector<Recorded> picked;
    // Recorded answers are kernels and summaries: none of them is a guidance text.
    if (request.purpose == "meta_prompt")
      return Result<std::vector<LlmAnswer>>::error(
          server_.label() +
          ": a replay server holds no recorded meta-prompt answers; meta-prompting needs a real "
          "server in inference.servers");
    if (!job_name_.empty()) {
      auto answer = from_job(request);
      if (!answer) return answer.status();
      picked.assign(server_.num_completions, answer.value());
    } else {
      bool feedback = request.purpose == "feedback";
      AnswerFolder& folder = feedback ? feedback_ : generate_;
      if (folder.names.empty())
        return Result<std::vector<LlmAnswer>>::error(
            server_.label() + ": no recorded feedback answers: add *.md files under " +
            (dir_ / "feedback").string() + " (" + server_.where + ".replay_path)");
      std::string pinned = strprintf("t%d_b%d.md", request.trial, request.branch);
      uint64_t first = request.sequence >= 0
                           ? uint64_t(request.sequence) * uint64_t(server_.num_completions)
                           : folder.next.fetch_add(server_.num_completions);
      for (int i = 0; i < server_.num_completions; ++i) {
        auto it = folder.texts.find(pinned);
        const std::string& name =
            it != folder.texts.end() ? pinned : folder.names[(first + i) % folder.names.size()];
        // The model a folder stands for: model_name when the config names one.
        picked.push_back(Recorded{folder.texts.at(name), server_.model_name.empty()
                                                             ? server_.label()
                                                             : "replay:" + server_.model_name});
      }
    }
    std::vector<LlmAnswer> answers;
    for (size_t i = 0; i < picked.size(); ++i) {
      LlmAnswer a;
      a.text = std::move(picked[i].text);
      a.model = std::move(picked[i].model);
      a.finish_reason = picked[i].finish_reason;
      a.truncated = a.finish_reason == "length" || a.finish_reason == "max_tokens";
      a.prompt_tokens =
          i == 0 ? estimate_tokens(request.system) + estimate_tokens(request.user) : 0;
      a.completion_tokens = estimate_tokens(a.text);
      a.latency_s = seconds_since(start);
      answers.push_back(std::move(a));
    }
    return answers;
  }

 private:
  Result<Recorded> from_job(const LlmRequest& request) const {
    if (request.purpose == "feedback")
      return Result<Recorded>::error(server_.label() + ": job " + job_name_ +
                                     " holds no recorded feedback answers; give the feedback LLM "
                                     "a folder replay (with feedback/) or a real server");
    auto it = by_call_.find({request.trial, request.branch});
    if (it == by_call_.end())
      return Result<Recorded>::error(
          strprintf("job %s has no recorded answer for iteration %d, "
                    "branch %d (%s)",
                    job_name_.c_str(), request.trial, request.branch, server_.label().c_str()));
    Recorded r = it->second;
    if (r.model.empty()) r.model = "unknown";
    if (r.model.rfind("replay:", 0) != 0) r.model = "replay:" + r.model;  // no replay:replay:
    return r;
  }

  ServerConfig server_;
  fs::path dir_;
  AnswerFolder generate_, feedback_;
  std::string job_name_;
  std::map<std::pair<int, int>, Recorded> by_call_;  // (trial, branch) -> answer
};

}  // namespace

Result<std::unique_ptr<LlmClient>> make_replay_client(const ServerConfig& server, Store* store) {
  using R = Result<std::unique_ptr<LlmClient>>;
  const std::string key = server.where + ".replay_path";
  std::string path = trim(server.replay_path);
  auto client = std::make_unique<ReplayClient>(server);
  if (starts_with(path, "job:")) {
    std::string job = trim(path.substr(4));
    if (job.empty()) return R::error(key + ": `job:` needs a job name, e.g. job:softmax_run1");
    if (store == nullptr)
      return R::error(key + ": replaying job " + job +
                      " needs the kernel database (paths.kernels_db_path), and none is open");
    KF_RETURN_IF_ERROR(client->load_job(job, *store));
    return R(std::move(client));
  }
  if (path.empty()) return R::error(key + ": required for a replay server");
  std::error_code ec;
  fs::path dir = fs::absolute(path, ec);
  if (ec || !fs::is_directory(dir, ec))
    return R::error(key + ": folder '" + path + "' (" + dir.string() +
                    ") does not exist; record answers there as *.md files, or use job:<job_name>");
  KF_RETURN_IF_ERROR(client->load(dir));
  return R(std::move(client));
}

}  // namespace kf
