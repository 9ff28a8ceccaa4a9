#include "submit/slurm_cluster.h"

#include <fcntl.h>
#include <functional>
#include <iostream>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace salt::testing {
namespace fs = std::filesystem;

namespace {

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

bool have(const std::string& tool) {
  return run_process({"bash", "-c", "command -v " + tool}).exit_code == 0;
}

bool have_slurm() {
  for (const auto* t : {"slurmctld", "slurmd", "sbatch", "scontrol", "scancel", "sinfo", "squeue", "srun"})
    if (!have(t)) return false;
  return true;
}

// The Debian packages, as scripts/bootstrap.sh installs them (CI has them already).
std::string install_slurm() {
  if (have_slurm()) return "";
  if (geteuid() != 0) return "Slurm is not installed and this is not root (run scripts/bootstrap.sh)";
  auto r = run_process({"bash", "-c",
                        "export DEBIAN_FRONTEND=noninteractive; apt-get install -y -qq --no-install-recommends "
                        "slurm-wlm slurmctld slurmd slurm-client munge >/dev/null 2>&1 || "
                        "{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "
                        "slurm-wlm slurmctld slurmd slurm-client munge >/dev/null; }"});
  if (r.exit_code != 0 || !have_slurm()) return "cannot install slurm-wlm slurmctld slurmd slurm-client munge: " + r.err;
  return "";
}

// Starts argv in the foreground of a child, output to `log`.
int spawn(const std::vector<std::string>& argv, const fs::path& log) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);  // its own group: a Ctrl-C of the test does not reach it before we stop it
    int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

bool exited(int pid) { return waitpid(pid, nullptr, WNOHANG) == pid; }

void terminate(int& pid) {
  if (pid <= 0) return;
  kill(pid, SIGTERM);
  for (int i = 0; i < 100; ++i) {
    if (exited(pid)) {
      pid = -1;
      return;
    }
    sleep_ms(50);
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  pid = -1;
}

bool poll(const std::function<bool()>& ready, int timeout_ms) {
  for (int waited = 0; waited < timeout_ms; waited += 100) {
    if (ready()) return true;
    sleep_ms(100);
  }
  return false;
}

std::string tail(const fs::path& file) {
  std::error_code ec;
  if (!fs::exists(file, ec)) return "";
  auto text = read_file(file);
  return text.size() > 1500 ? text.substr(text.size() - 1500) : text;
}

}  // namespace

std::string SlurmCluster::start() {
  if (auto why = install_slurm(); !why.empty()) return why;
  dir_ = std::make_unique<TempDir>();
  const auto d = dir_->path();
  fs::create_directories(d / "state");
  fs::create_directories(d / "spool");
  // The node's real hardware line (CPUs, memory), renamed to localhost on loopback.
  auto hw = run_process({"slurmd", "-C"});
  std::string node = hw.out.substr(0, hw.out.find('\n'));
  node = "NodeName=localhost NodeAddr=127.0.0.1" + node.substr(node.find(' '));
  conf_ = d / "slurm.conf";
  std::ostringstream c;
  c << "ClusterName=salttest\n"
    << "SlurmctldHost=localhost(127.0.0.1)\n"
    << "SlurmUser=root\nSlurmdUser=root\n"
    << "AuthType=auth/none\nCredType=cred/none\n"
    << "AuthInfo=cred_expire=5\n"  // a requeued job restarts cred_expire+1 s later (5 is the minimum)
    << "StateSaveLocation=" << (d / "state").string() << "\n"
    << "SlurmdSpoolDir=" << (d / "spool").string() << "\n"
    << "SlurmctldPidFile=" << (d / "slurmctld.pid").string() << "\n"
    << "SlurmdPidFile=" << (d / "slurmd.pid").string() << "\n"
    << "SlurmctldLogFile=" << (d / "slurmctld.log").string() << "\n"
    << "SlurmdLogFile=" << (d / "slurmd.log").string() << "\n"
    << "ProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
    << "JobAcctGatherType=jobacct_gather/none\nAccountingStorageType=accounting_storage/none\n"
    << "MpiDefault=none\nMailProg=/bin/true\n"
    << "SchedulerParameters=bf_interval=1,sched_interval=1\n"  // else requeued jobs wait ~30 s more
    << "JobRequeue=1\nKillWait=5\nReturnToService=2\n"
    << "SelectType=select/cons_tres\n"
    << node << "\n"
    << "PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP\n";
  write_file(conf_, c.str());
  setenv("SLURM_CONF", conf_.c_str(), 1);  // for sbatch/scontrol here and, via --export=ALL, the jobs

  ctld_pid_ = spawn({"slurmctld", "-D", "-i", "-f", conf_.string()}, d / "slurmctld.out");
  if (!poll([] { return run_process({"scontrol", "ping"}).out.find("UP") != std::string::npos; }, 20000))
    return "slurmctld did not come up:\n" + logs();
  slurmd_pid_ = spawn({"slurmd", "-D", "-f", conf_.string(), "-N", "localhost"}, d / "slurmd.out");
  if (!poll([] { return run_process({"sinfo", "-h", "-o", "%T"}).out.find("idle") != std::string::npos; }, 20000))
    return "slurmd did not become idle:\n" + logs();
  return "";
}

void SlurmCluster::stop() {
  if (ctld_pid_ > 0 && slurmd_pid_ > 0) {
    // Jobs still running (a failed test) must not outlive the cluster.
    run_process({"scancel", "--full", "--quiet", "--partition=debug"});
    poll([] { return run_process({"squeue", "-h"}).out.empty(); }, 10000);
  }
  terminate(slurmd_pid_);
  terminate(ctld_pid_);
}

std::string SlurmCluster::logs() const {
  if (!dir_) return "";
  const auto d = dir_->path();
  return "--- slurmctld.log\n" + tail(d / "slurmctld.log") + tail(d / "slurmctld.out") + "--- slurmd.log\n" +
         tail(d / "slurmd.log") + tail(d / "slurmd.out");
}

namespace {

std::unique_ptr<SlurmCluster>& the_cluster() {
  static std::unique_ptr<SlurmCluster> c;
  return c;
}

std::string& unavailable() {
  static std::string why = "the Slurm test environment did not run";
  return why;
}

void stop_at_exit() {
  if (the_cluster()) the_cluster()->stop();
}

class SlurmEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    the_cluster() = std::make_unique<SlurmCluster>();
    std::atexit(stop_at_exit);
    unavailable() = the_cluster()->start();
    if (!unavailable().empty()) {
      std::cerr << "SKIP: no Slurm for these tests: " << unavailable() << "\n";
      the_cluster()->stop();
    }
  }
  void TearDown() override { the_cluster().reset(); }
};

[[maybe_unused]] auto* const kEnvironment = ::testing::AddGlobalTestEnvironment(new SlurmEnvironment);

}  // namespace

SlurmCluster& cluster() { return *the_cluster(); }
const std::string& cluster_unavailable() { return unavailable(); }

std::map<std::string, std::string> job_info(const std::string& id) {
  std::map<std::string, std::string> info;
  auto r = run_process({"scontrol", "show", "job", id});
  std::istringstream words(r.out);
  std::string word;
  while (words >> word) {
    auto eq = word.find('=');
    if (eq != std::string::npos && !info.count(word.substr(0, eq))) info[word.substr(0, eq)] = word.substr(eq + 1);
  }
  return info;
}

bool wait_for_job(const std::string& id, int timeout_s) {
  return poll([&] { return run_process({"squeue", "-h", "-j", id}).out.empty(); }, timeout_s * 1000);
}

}  // namespace salt::testing
