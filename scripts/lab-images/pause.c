// The pod sandbox's process for the kubelet lab (registry.k8s.io/pause:3.10 in every node's
// containerd, built by scripts/lab-images.sh): holds the pod's namespaces, reaps the zombies of
// the processes that share its PID namespace, and exits 0 on SIGINT or SIGTERM.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void Reap(int sig) {
  (void)sig;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

static void Quit(int sig) {
  (void)sig;
  _exit(0);
}

int main(void) {
  struct sigaction quit = {0};
  quit.sa_handler = Quit;
  sigaction(SIGINT, &quit, 0);
  sigaction(SIGTERM, &quit, 0);
  struct sigaction reap = {0};
  reap.sa_handler = Reap;
  reap.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  sigaction(SIGCHLD, &reap, 0);
  for (;;) pause();
}
