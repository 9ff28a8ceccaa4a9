// `salt fit --trainer.devices N` on one machine without a launcher: this process
// becomes the launcher. It starts N workers running the same command (plus RANK,
// LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1, MASTER_PORT=a
// free port), forwards their output line by line as "[rank R] ...", and:
//
// - notices a worker's death at once (SIGCHLD wakes it), stops the others (SIGTERM,
//   SIGKILL after a grace period) and fails with that rank's error line;
// - forwards SIGINT, SIGTERM and SIGUSR1 (requeue) to the workers; they agree at a
//   step boundary to stop together;
// - workers run in their own process group (a terminal's Ctrl-C reaches only the
//   launcher, which forwards it once) and get SIGTERM if the launcher dies.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace salt::parallel {

struct LocalLaunchOptions {
  std::string program = "/proc/self/exe";
  std::vector<std::string> args;  // the worker's arguments (argv[1..])
  int num_processes = 2;
  int port = 0;                 // MASTER_PORT; 0 = a free one
  int threads_per_process = 0;  // OMP_NUM_THREADS when it is unset: 0 = cores / processes (at least 1)
  std::chrono::milliseconds grace{std::chrono::seconds(10)};  // SIGTERM -> SIGKILL
  std::vector<std::string> extra_env;  // "KEY=VALUE" for every worker

  LocalLaunchOptions& set_program(std::string p) { program = std::move(p); return *this; }
  LocalLaunchOptions& set_args(std::vector<std::string> a) { args = std::move(a); return *this; }
  LocalLaunchOptions& set_num_processes(int n) { num_processes = n; return *this; }
  LocalLaunchOptions& set_port(int p) { port = p; return *this; }
  LocalLaunchOptions& set_threads_per_process(int t) { threads_per_process = t; return *this; }
  LocalLaunchOptions& set_grace(std::chrono::milliseconds g) { grace = g; return *this; }
  LocalLaunchOptions& add_env(std::string kv) { extra_env.push_back(std::move(kv)); return *this; }
};

// Runs the workers to the end. Returns 0 when every rank succeeded; throws
// UserError("rank R failed ...", its exit code) when one failed, StopRequested when
// a forwarded SIGINT/SIGTERM stopped them.
int run_local_workers(const LocalLaunchOptions& options);

}  // namespace salt::parallel
