#!/usr/bin/env bash
# A final check of PureLB's v2 examples against Pylon (issue 14; not part of the tests: the
# examples are for reading). Brings up a one-node lab (a real kube-apiserver, Pylon's CRDs and
# RBAC, the allocator and an agent), applies every example in file order with kubectl's default
# validation, and prints, per file, what it is (a fragment or an example marked stale is only
# reported), whether the API server took it, and how it behaves: a ServiceGroup's or
# LBNodeAgent's verdict from Pylon (status, warnings), a Service's addresses and the group it
# got them from. Namespaces that an example names are created first, as a user would have them.
# Nothing leaves the lab: the examples' addresses exist only inside its network namespaces.
#
#   scripts/purelb-examples.sh [EXAMPLES_DIR]     (root; default ../shared/reference/purelb-v2-examples)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(cd "${1:-../shared/reference/purelb-v2-examples}" && pwd)
bash scripts/build.sh >/dev/null
k8s_bin=$(bash scripts/k8s-components.sh | tail -n 1)
lab=pexamples
build/pylon-dev lab up --name "$lab" --nodes 1 >/dev/null
trap 'build/pylon-dev lab down --name "$lab" >/dev/null' EXIT
kubectl() { "$k8s_bin/kubectl" --kubeconfig "/tmp/pylon-lab/$lab/kubeconfig" "$@"; }

for ns in $(grep -hE '^  namespace: ' "$dir"/*.yaml | awk '{print $2}' | sort -u); do
  kubectl create namespace "$ns" >/dev/null 2>&1 || true
done
printf '%-45s %-22s %s\n' file kind "apply (kubectl, default validation)"
for f in "$dir"/*.yaml; do
  name=$(basename "$f")
  kind=$(sed -nE 's/^kind: *([A-Za-z]+).*/\1/p' "$f" | head -n 1)
  if [[ -z $kind ]]; then
    printf '%-45s %-22s %s\n' "$name" "-" "fragment (no kind): not applied"
    continue
  fi
  if out=$(kubectl apply -f "$f" 2>&1); then
    printf '%-45s %-22s %s\n' "$name" "$kind" "applied"
  else
    what=REFUSED
    [[ $name == *stale* ]] && what="refused (a stale example: expected)"
    printf '%-45s %-22s %s: %s\n' "$name" "$kind" "$what" "$(echo "$out" | tail -n 1)"
  fi
done

sleep 5  # the allocator and the agent act on what was applied
echo
echo "== ServiceGroups (Pylon's verdict)"
kubectl get servicegroups.v2.purelb.io -A -o \
  custom-columns='NAME:.metadata.name,WRITTEN-AS:.spec.writtenAs,VALID:.status.valid,MESSAGE:.status.message,WARNINGS:.status.warnings'
echo
echo "== LBNodeAgents"
kubectl get lbnodeagents.v2.purelb.io -A -o custom-columns='NAME:.metadata.name,WRITTEN-AS:.spec.writtenAs'
echo
echo "== Services"
kubectl get services -A -o \
  custom-columns='NAMESPACE:.metadata.namespace,NAME:.metadata.name,CLASS:.spec.loadBalancerClass,ADDRESSES:.status.loadBalancer.ingress[*].ip,GROUP:.metadata.annotations.purelb\.io/allocated-from' |
  grep -v '^default *kubernetes '
echo
echo "== Warning events"
kubectl get events -A --field-selector type=Warning -o \
  custom-columns='OBJECT:.involvedObject.name,REASON:.reason,MESSAGE:.message'
