// `pylon-dev lab serve`: the responder of every lab node and pod (responder.h).
#include <cstdio>
#include <memory>
#include <thread>

#include "lab/command.h"
#include "lab/responder.h"

namespace pylon::lab {

Subcommand AddServe(cli::App& lab) {
  struct Flags {
    int port = 80;
    std::string text = "pylon";
    bool report_peer = false;
    int echo_port = 0;
  };
  auto f = std::make_shared<Flags>();
  auto* sub = lab.add_subcommand("serve", "(inside a node) answer HTTP with a text");
  sub->add_option("--port", f->port, "the TCP port, on every address")->check(CLI::Range(1, 65535));
  sub->add_option("--text", f->text, "the answer")->type_name("TEXT");
  sub->add_flag("--report-peer", f->report_peer,
                "the answer followed by \" client=<source address>\"");
  sub->add_option("--echo-port", f->echo_port,
                  "also echo every byte on this TCP port (long-lived flows, StreamSet)")
      ->check(CLI::Range(1, 65535));
  auto run = [f] {
    // One line at start: what `kubectl logs` shows of a pod running the responder.
    std::fprintf(stderr, "pylon-dev lab serve: answering on port %d with \"%s\"\n", f->port,
                 f->text.c_str());
    std::thread echo;
    if (f->echo_port != 0) {
      echo = std::thread([f] {
        if (auto s = ServeEcho(f->echo_port, StopFlag()); !s) {
          std::fprintf(stderr, "pylon-dev lab serve: echo: %s\n", s.error().message().c_str());
        }
      });
    }
    auto s = ServeText(f->port, f->text, StopFlag(), f->report_peer);
    if (echo.joinable()) echo.join();
    if (!s) {
      std::fprintf(stderr, "pylon-dev lab serve: %s\n", s.error().message().c_str());
      return cli::kExitFailure;
    }
    return cli::kExitOk;
  };
  return {sub, run, /*needs_root=*/false};
}

}  // namespace pylon::lab
