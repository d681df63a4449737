// Job ownership: pid + host in the job row, a heartbeat thread, and the liveness test.
#include "search/job_owner.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <ctime>
#include <fstream>

#include "util/strings.h"

namespace kf {

namespace {

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Seconds since the epoch of "YYYY-MM-DDTHH:MM:SS(.mmm)Z"; 0 when it does not parse.
double parse_iso8601(const std::string& text) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                  &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &ms) < 6)
    return 0;
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<double>(::timegm(&tm)) + ms / 1000.0;
}

double now_epoch_s() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

JobOwner this_process() {
  JobOwner owner;
  owner.pid = static_cast<int64_t>(::getpid());
  char name[256] = {0};
  if (::gethostname(name, sizeof name - 1) == 0) owner.host = name;
  if (owner.host.empty()) owner.host = "localhost";
  return owner;
}

bool job_owner_alive(const JobRecord& job, double stale_after_s) {
  if (job.status != "running") return false;
  if (job.owner_pid <= 0) return false;  // written before owners were recorded
  JobOwner me = this_process();
  if (job.owner_host == me.host) {
    if (job.owner_pid == me.pid) return true;
    if (::kill(static_cast<pid_t>(job.owner_pid), 0) != 0 && errno != EPERM) return false;
    // The number may have been reused by an unrelated process since the job died.
    std::string theirs = first_line("/proc/" + std::to_string(job.owner_pid) + "/comm");
    std::string mine = first_line("/proc/self/comm");
    return theirs.empty() || mine.empty() || theirs == mine;
  }
  double beat = parse_iso8601(job.heartbeat_at);
  return beat > 0 && now_epoch_s() - beat < stale_after_s;
}

std::string effective_status(const JobRecord& job) {
  if (job.status == "running" && !job_owner_alive(job)) return "interrupted";
  return job.status;
}

std::string describe_owner(const JobRecord& job) {
  std::string text = strprintf("pid %lld on host %s", static_cast<long long>(job.owner_pid),
                               job.owner_host.c_str());
  if (!job.heartbeat_at.empty()) text += ", last heartbeat " + job.heartbeat_at;
  return text;
}

JobHeartbeat::JobHeartbeat(std::filesystem::path db_path, std::string job_name, JobOwner owner,
                           double interval_s)
    : db_path_(std::move(db_path)),
      job_name_(std::move(job_name)),
      owner_(std::move(owner)),
      interval_s_(interval_s) {
  thread_ = std::thread([this] { loop(); });
}

JobHeartbeat::~JobHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void JobHeartbeat::loop() {
  // A connection of its own: the job's connection may be inside a long transaction.
  auto store = Store::open(db_path_);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    wake_.wait_for(lock, std::chrono::duration<double>(interval_s_), [this] { return stop_; });
    if (stop_ || !store) break;
    lock.unlock();
    (void)(*store)->heartbeat_job(job_name_, owner_.pid, owner_.host);
    lock.lock();
  }
}

}  // namespace kf
