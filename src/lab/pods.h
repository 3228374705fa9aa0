// Pods in the lab (docs/datapath.md): no kubelet and no Pod objects, but a network namespace per
// pod attached to its node by a veth pair, an HTTP responder in it that answers with the pod's
// name, its node and the client address it saw, and the EndpointSlices a real cluster's
// endpointslice controller would write for it.
//
// Addresses (private ranges, only inside the lab's namespaces):
//   node i's pod CIDRs   10.244.i.0/24, fd00:10:244:i::/64
//   pod k on node i      10.244.i.(10+k)/32, fd00:10:244:i::(10+k)/128 on the pod's eth0
//   the pod's gateway    169.254.1.1 and fe80::1 on the node's end of the veth (vp<k>)
//   pod netns            pylon-<lab>-p<i><k>   (k in 1..9)
// Every node routes the other nodes' pod CIDRs via their LAN A addresses (192.0.2.(10+j),
// 2001:db8:1::(10+j)) and forwards (ip_forward, IPv6 forwarding, in its own namespace only).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "lab/topology.h"

namespace pylon::lab {

struct LabPod {
  std::string name;
  std::string node;                    // node1, ...
  std::string namespace_ = "default";  // of the Service
  std::string service;                 // the Service's name (kubernetes.io/service-name)
  std::string netns;                   // pylon-<lab>-p<i><k>
  std::string host_veth;               // vp<k> in the node's namespace
  std::string ipv4;
  std::string ipv6;
  int port = 8080;  // the responder's port = the Service's targetPort
  bool ready = true;
};

// 1-based index of a node in the topology (node3 → 3), 0 if unknown.
int NodeIndex(const Topology& topology, const std::string& node);

// Forwarding and the routes to every other node's pod CIDRs, in every node. Idempotent.
Status SetUpPodRouting(const Topology& topology);

// The pod's namespace, veth pair, addresses and routes (not its process). On failure removes
// what it made.
Status CreatePodNetwork(const LabNode& node, const LabPod& pod);
// Removes the pod's namespace (and with it the veth pair).
Status DeletePodNetwork(const LabPod& pod);

// The EndpointSlice of one family ("IPv4" / "IPv6") for a Service, with these pods as endpoints
// (all of the Service's pods; an empty list gives a slice with no endpoints).
std::string EndpointSliceYaml(const std::string& ns, const std::string& service,
                              const std::string& address_type, const std::vector<LabPod>& pods);

}  // namespace pylon::lab
