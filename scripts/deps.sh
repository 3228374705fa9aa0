#!/usr/bin/env bash
# Installs every Debian package Pylon needs to build, test and run its lab. Idempotent; needs root.
#   scripts/deps.sh         to build, test and run the lab (also the Dockerfile's build stage)
#   scripts/deps.sh image   to build the images without Docker or a registry (scripts/image.sh)
set -euo pipefail
PKGS=(
  build-essential cmake ninja-build ccache pkg-config
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  nlohmann-json3-dev libexpected-dev libcli11-dev libcurl4-openssl-dev libssl-dev libmnl-dev libyaml-cpp-dev
  clang clang-14 libclang-rt-14-dev clang-format
  iproute2 iputils-ping iputils-arping ndisc6 tcpdump curl jq procps psmisc openssl socat
  universal-ctags
  iptables nftables libnftables-dev conntrack bird2
  # The kubelet lab (docs/lab.md): a containerd per node, runc, the CNI bridge and host-local
  # plugins in /usr/lib/cni.
  containerd runc containernetworking-plugins
)
if [[ ${1:-} == image ]]; then
  PKGS=(buildah debootstrap umoci binutils git)
fi
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "pylon: missing Debian packages: ${missing[*]} (run as root to install them)" >&2
    exit 1
  fi
  echo "pylon: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
