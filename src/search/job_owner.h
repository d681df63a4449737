// Who runs a job: the owning process (pid + host) recorded in the job row, a heartbeat while it
// runs, and the test that tells a live job from one whose process died (crash, kill -9, reboot).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "store/store.h"

namespace kf {

struct JobOwner {
  int64_t pid = 0;
  std::string host;
};

// This process.
JobOwner this_process();

// A heartbeat older than this marks a job on another host as dead.
constexpr double kJobStaleAfterS = 60;
// How often a running job refreshes its heartbeat.
constexpr double kJobHeartbeatS = 10;

// Whether the process recorded as running `job` is still alive. On this host the pid decides
// (it must exist and still be a KernelFoundry process, not a reused number); on another host
// the heartbeat must be younger than `stale_after_s`. A job that is not 'running' has no live
// owner.
bool job_owner_alive(const JobRecord& job, double stale_after_s = kJobStaleAfterS);

// The status to show: 'interrupted' for a job recorded as running whose process is gone.
std::string effective_status(const JobRecord& job);

// "pid 1234 on host node7, last heartbeat 2026-12-03T10:01:02.345Z".
std::string describe_owner(const JobRecord& job);

// Refreshes the job's heartbeat every `interval_s` on a thread of its own (with its own database
// connection, so it never waits behind the job's writes), until destroyed.
class JobHeartbeat {
 public:
  JobHeartbeat(std::filesystem::path db_path, std::string job_name, JobOwner owner,
               double interval_s = kJobHeartbeatS);
  ~JobHeartbeat();
  JobHeartbeat(const JobHeartbeat&) = delete;
  JobHeartbeat& operator=(const JobHeartbeat&) = delete;

 private:
  void loop();

  std::filesystem::path db_path_;
  std::string job_name_;
  JobOwner owner_;
  double interval_s_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace kf
