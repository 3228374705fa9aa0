// What clients see of one address while something happens to its holder (a rollout, a kill, a
// drain): from the lab's client, the 10 ms request prober, long-lived flows (StreamSet) and who
// answers ARP (IPv4) or NS (IPv6) for the address every 20 ms, as the lab's observer
// (neighbor_probe.h). Counted, never timed: how often the answering node changed, how many rounds
// had two nodes answering, how many requests failed and how many flows broke.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "lab/lab.h"
#include "lab/responder.h"

namespace pylon::lab {

struct AddressCounts {
  int moves = 0;           // changes of the one MAC answering (nobody answering is not a move)
  int double_answers = 0;  // neighbour rounds with two or more MACs answering
  int silent_rounds = 0;   // neighbour rounds with no answer
  int rounds = 0;
  int requests = 0;
  int failed = 0;
  std::vector<std::string> macs;  // every MAC that answered, in order of first answer
  StreamStats streams;
};

class AddressWatch {
 public:
  // Starts watching `ip` from the lab's client: HTTP requests to http_port every 10 ms (1 s
  // timeout each), `streams` flows to echo_port (0: none), the neighbour rounds. Fails if the
  // flows cannot open.
  static Result<std::unique_ptr<AddressWatch>> Start(const Lab& lab, const std::string& ip,
                                                     int http_port, int echo_port, int streams);
  ~AddressWatch();
  AddressWatch(const AddressWatch&) = delete;
  AddressWatch& operator=(const AddressWatch&) = delete;
  AddressCounts Stop();

 private:
  AddressWatch() = default;
  std::atomic<bool> stop_{false};
  std::thread prober_, neighbours_;
  std::unique_ptr<StreamSet> flows_;
  AddressCounts counts_;  // prober_ writes requests/failed, neighbours_ the rest; read after join
};

}  // namespace pylon::lab
