#!/usr/bin/env bash
# Node lease writes on a running lab (`pylon-dev lab up --name NAME`), over SECONDS (default 60):
#  - the agents' own count: purelb_election_lease_renewals_total{result="success"}, summed, and
#    each agent's purelb_election_lease_quiet at the end (1 = quiet lease, docs/failover.md);
#  - kube-apiserver's count: apiserver_request_total{resource="leases",verb="PUT"} (every Lease
#    update: the agents' node leases, the allocator's leader lease, kube-apiserver's own);
#  - the agents' share from the audit log: Lease updates by the agent ServiceAccount;
#  - the Lease watch events kube-apiserver sent (apiserver_watch_events_total{resource="leases"}:
#    every agent watches every node lease, the allocator its own).
# Needs root (the nodes' network namespaces). Usage: scripts/lease-writes.sh NAME [SECONDS]
set -euo pipefail
name=${1:?usage: $0 NAME [SECONDS]}
seconds=${2:-60}
dir=/tmp/pylon-lab/$name
kubectl=${KUBECTL:-$(ls /var/cache/pylon/k8s-*/bin/kubectl 2>/dev/null | head -n 1)}
[ -x "$kubectl" ] || { echo "no kubectl (set KUBECTL)" >&2; exit 1; }
nodes=$(ip netns list | awk '{print $1}' | grep -E "^pylon-$name-n[0-9]+$" | sort -V)
[ -n "$nodes" ] || { echo "no lab $name" >&2; exit 1; }

agent_metric() {  # netns, sample name with labels
  ip netns exec "$1" curl -s --max-time 3 http://127.0.0.1:7473/metrics |
    awk -v want="$2" '$1 == want { print $2; found = 1 } END { if (!found) print 0 }'
}
agents_renewed() {
  local sum=0 n
  for ns in $nodes; do
    n=$(agent_metric "$ns" 'purelb_election_lease_renewals_total{result="success"}')
    sum=$(awk -v a="$sum" -v b="$n" 'BEGIN { print a + b }')
  done
  echo "$sum"
}
apiserver_updates() {
  KUBECONFIG=$dir/kubeconfig "$kubectl" get --raw /metrics |
    awk '/^apiserver_request_total\{/ && /resource="leases"/ && /verb="PUT"/ { s += $2 }
         END { print s + 0 }'
}
apiserver_lease_watch_events() {
  KUBECONFIG=$dir/kubeconfig "$kubectl" get --raw /metrics |
    awk '/^apiserver_watch_events_total\{/ && /resource="leases"/ { s += $2 } END { print s + 0 }'
}
audit_agent_updates() {  # lines of the audit log from line $1 on
  tail -n +"$1" "$dir/audit.log" |
    jq -r 'select(.stage == "ResponseComplete" and .verb == "update"
                  and .objectRef.resource == "leases") | .user.username' |
    sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 } END { print "" }'
}

a0=$(agents_renewed)
s0=$(apiserver_updates)
w0=$(apiserver_lease_watch_events)
l0=$(($(wc -l <"$dir/audit.log") + 1))
sleep "$seconds"
a1=$(agents_renewed)
s1=$(apiserver_updates)
w1=$(apiserver_lease_watch_events)
by_user=$(audit_agent_updates "$l0")
quiet=""
for ns in $nodes; do quiet+="${ns##*-}=$(agent_metric "$ns" purelb_election_lease_quiet) "; done

n=$(echo "$nodes" | wc -w)
awk -v n="$n" -v s="$seconds" -v a="$((${a1%.*} - ${a0%.*}))" -v u="$((${s1%.*} - ${s0%.*}))" \
  'BEGIN { printf "nodes %d, %d s: agent lease renewals %d (%.2f/s, %.3f/s per node); " \
                  "kube-apiserver lease updates %d (%.2f/s)\n", n, s, a, a / s, a / s / n, u, u / s }'
echo "lease watch events sent: $((${w1%.*} - ${w0%.*}))"
echo "lease updates by user (audit log): $by_user"
echo "purelb_election_lease_quiet: $quiet"
