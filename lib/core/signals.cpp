#include "core/signals.h"

#include <csignal>

namespace salt {
namespace {

volatile std::sig_atomic_t g_stop = 0;
volatile std::sig_atomic_t g_requeue = 0;

extern "C" void on_stop(int sig) {
  if (g_stop != 0 && sig == SIGINT) std::signal(SIGINT, SIG_DFL);
  g_stop = sig;
}

extern "C" void on_usr1(int) { g_requeue = 1; }

}  // namespace

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);  // the terminal or ssh session closed: stop as cleanly
  struct sigaction usr {};
  usr.sa_handler = on_usr1;
  sigemptyset(&usr.sa_mask);
  sigaction(SIGUSR1, &usr, nullptr);
}

int stop_signal() { return g_stop; }

bool take_requeue_request() {
  if (!g_requeue) return false;
  g_requeue = 0;
  return true;
}

}  // namespace salt
