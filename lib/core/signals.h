// SIGINT/SIGTERM (and SIGUSR1 for batch-system requeue) are turned into a flag
// that long-running loops poll between steps, so they can stop cleanly: no
// half-written files, temp copies removed, a clear message and exit code.
#pragma once

namespace salt {

// Installs the handlers (idempotent). The second SIGINT restores the default action
// so an impatient Ctrl-C still kills the process.
void install_stop_handlers();

// The signal that asked to stop (SIGINT, SIGTERM), or 0.
int stop_signal();

// Whether SIGUSR1 (the batch system's pre-timeout warning) has arrived; reading clears it.
bool take_requeue_request();

// Thrown by loops that stopped because of stop_signal(); main() exits with 128 + signal.
struct StopRequested {
  int signal;
};

}  // namespace salt
