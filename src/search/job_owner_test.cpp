// Tests for job ownership: the liveness test and the heartbeat.
#include "search/job_owner.h"

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <gtest/gtest.h>

#include "util/fs.h"

namespace kf {
namespace {

JobRecord running_job(int64_t pid, const std::string& host, const std::string& heartbeat = "") {
  JobRecord job;
  job.job_name = "j";
  job.status = "running";
  job.owner_pid = pid;
  job.owner_host = host;
  job.heartbeat_at = heartbeat;
  return job;
}

// A pid that has just exited (reaped), so nothing runs under it for a while.
int64_t dead_pid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(JobOwner, ThisProcessIsAlive) {
  JobOwner me = this_process();
  EXPECT_GT(me.pid, 0);
  EXPECT_FALSE(me.host.empty());
  JobRecord job = running_job(me.pid, me.host);
  EXPECT_TRUE(job_owner_alive(job));
  EXPECT_EQ(effective_status(job), "running");
}

TEST(JobOwner, ADeadPidOnThisHostMeansInterrupted) {
  JobRecord job = running_job(dead_pid(), this_process().host, now_iso8601());
  EXPECT_FALSE(job_owner_alive(job)) << "a fresh heartbeat does not revive a dead local pid";
  EXPECT_EQ(effective_status(job), "interrupted");
}

TEST(JobOwner, APidReusedByAnotherProgramIsNotTheOwner) {
  // pid 1 exists, but it is not this program.
  JobRecord job = running_job(1, this_process().host);
  EXPECT_FALSE(job_owner_alive(job));
}

TEST(JobOwner, OtherHostsAreJudgedByTheirHeartbeat) {
  EXPECT_TRUE(job_owner_alive(running_job(42, "elsewhere", now_iso8601())));
  EXPECT_FALSE(job_owner_alive(running_job(42, "elsewhere", "2020-01-01T00:00:00.000Z")));
  EXPECT_FALSE(job_owner_alive(running_job(42, "elsewhere", "")));
}

TEST(JobOwner, OnlyRunningJobsHaveOwners) {
  JobOwner me = this_process();
  JobRecord done = running_job(me.pid, me.host);
  done.status = "done";
  EXPECT_FALSE(job_owner_alive(done));
  EXPECT_EQ(effective_status(done), "done");
  EXPECT_EQ(effective_status(running_job(0, "")), "interrupted") << "rows from before owners";
}

TEST(JobOwner, HeartbeatRefreshesTheRowWhileOwned) {
  auto dir = make_temp_dir(std::filesystem::temp_directory_path(), "kf-owner");
  ASSERT_TRUE(dir.is_ok());
  auto db = *dir / "k.sqlite3";
  auto store = Store::open(db);
  ASSERT_TRUE(store.is_ok()) << store.message();
  JobOwner me = this_process();
  JobRecord job = running_job(me.pid, me.host, "2020-01-01T00:00:00.000Z");
  ASSERT_TRUE((*store)->put_job(job).is_ok());
  {
    JobHeartbeat beat(db, "j", me, 0.05);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
  }
  auto after = (*store)->job("j");
  ASSERT_TRUE(after.is_ok() && after->has_value());
  EXPECT_GT((*after)->heartbeat_at, "2026") << (*after)->heartbeat_at;
  // Another owner: the heartbeat of the old one no longer touches the row.
  auto taken = (*store)->heartbeat_job("j", me.pid + 1, me.host);
  ASSERT_TRUE(taken.is_ok());
  EXPECT_FALSE(*taken);
  std::error_code ec;
  std::filesystem::remove_all(*dir, ec);
}

}  // namespace
}  // namespace kf
