// A real single-node Slurm on loopback for the tests (see
// /work/shared/slurm-notes.md): slurmctld and slurmd started in the foreground
// as children of the test process, with auth/none and every state, spool, pid
// and log file in a temp dir; SLURM_CONF exported so sbatch, scontrol and the
// jobs find it. One per test binary (a gtest Environment); stopped by PID at
// the end, also when a test fails or the process exits early (atexit).
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "support/test_support.h"

namespace salt::testing {

class SlurmCluster {
 public:
  SlurmCluster() = default;
  ~SlurmCluster() { stop(); }
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  // Empty when up; else why not (missing packages that could not be installed, a
  // daemon that did not start), with the daemons' log tails.
  std::string start();
  void stop();  // cancels jobs, SIGTERM (then SIGKILL) to both daemons by PID
  bool up() const { return ctld_pid_ > 0 && slurmd_pid_ > 0; }
  const std::filesystem::path& conf() const { return conf_; }
  std::string logs() const;  // tails of the daemons' logs, for failure messages

 private:
  std::unique_ptr<TempDir> dir_;
  std::filesystem::path conf_;
  int ctld_pid_ = -1, slurmd_pid_ = -1;
};

// The cluster of this test binary; started by the Environment before the first test.
SlurmCluster& cluster();
const std::string& cluster_unavailable();  // why the tests skip, or empty

// `scontrol show job ID` as key=value pairs (first record; array tasks: use task id).
std::map<std::string, std::string> job_info(const std::string& id);
// Waits until no job of `id` (or its array tasks) is pending or running; false on timeout.
bool wait_for_job(const std::string& id, int timeout_s);

}  // namespace salt::testing
