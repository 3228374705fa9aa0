#!/usr/bin/env bash
# Images for the kubelet lab (docs/lab.md), made without a registry or a container engine: a root
# filesystem packed here as an OCI image archive (one uncompressed layer) that
# `ctr images import` takes. Cached outside the checkout, like the Kubernetes components.
#
#   lab-images.sh pause            registry.k8s.io/pause:3.10, the pods' sandbox image: the static
#                                  C program scripts/lab-images/pause.c
#   lab-images.sh echo PYLON_DEV   docker.io/library/pylon-lab-echo:lab, the lab's responder in an
#                                  image: PYLON_DEV (`pylon-dev lab serve`, the entrypoint) and the
#                                  shared libraries ldd lists for it. Once scripts/image.sh builds
#                                  the project's image, the lab can import that one the same way.
#
#   PYLON_IMAGE_CACHE   cache directory (default $PYLON_K8S_CACHE/images, /var/cache/pylon/images)
#
# Prints the archive's path on its last line. An archive is named after the hash of what it is
# made from, so a changed input makes a new one; the echo archives of other builds older than a
# day are removed.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CACHE=${PYLON_IMAGE_CACHE:-${PYLON_K8S_CACHE:-/var/cache/pylon}/images}

usage() { echo "usage: $0 pause | echo PYLON_DEV" >&2; exit 2; }

# oci_archive ROOTFS IMAGE_NAME ENTRYPOINT_JSON CMD_JSON OUT: an OCI image layout of ROOTFS as one
# layer, tarred to OUT. `ctr images import` names the image after the index's
# io.containerd.image.name annotation.
oci_archive() {
  local rootfs=$1 name=$2 entrypoint=$3 cmd=$4 out=$5
  local layout
  layout=$(mktemp -d)
  mkdir -p "$layout/blobs/sha256"
  tar -C "$rootfs" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 --format=gnu \
    -cf "$layout/layer.tar" .
  local layer_digest layer_size
  layer_digest=$(sha256sum "$layout/layer.tar" | cut -d' ' -f1)
  layer_size=$(stat -c %s "$layout/layer.tar")
  mv "$layout/layer.tar" "$layout/blobs/sha256/$layer_digest"
  printf '%s' '{"architecture":"amd64","os":"linux","config":{"Entrypoint":'"$entrypoint"',"Cmd":'"$cmd"',"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:'"$layer_digest"'"]}}' \
    >"$layout/config.json"
  local config_digest config_size
  config_digest=$(sha256sum "$layout/config.json" | cut -d' ' -f1)
  config_size=$(stat -c %s "$layout/config.json")
  mv "$layout/config.json" "$layout/blobs/sha256/$config_digest"
  printf '%s' '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:'"$config_digest"'","size":'"$config_size"'},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:'"$layer_digest"'","size":'"$layer_size"'}]}' \
    >"$layout/manifest.json"
  local manifest_digest manifest_size
  manifest_digest=$(sha256sum "$layout/manifest.json" | cut -d' ' -f1)
  manifest_size=$(stat -c %s "$layout/manifest.json")
  mv "$layout/manifest.json" "$layout/blobs/sha256/$manifest_digest"
  printf '%s' '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:'"$manifest_digest"'","size":'"$manifest_size"',"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"'"$name"'","org.opencontainers.image.ref.name":"'"${name##*:}"'"}}]}' \
    >"$layout/index.json"
  printf '%s' '{"imageLayoutVersion":"1.0.0"}' >"$layout/oci-layout"
  tar -C "$layout" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$out.tmp" \
    oci-layout index.json blobs
  mv "$out.tmp" "$out"
  rm -rf "$layout"
}

[[ $# -ge 1 ]] || usage
mkdir -p "$CACHE"
exec 9>"$CACHE/.lab-images.lock"
flock 9
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

case $1 in
  pause)
    [[ $# -eq 1 ]] || usage
    key=$(cat "$here/lab-images/pause.c" "$0" | sha256sum | cut -c1-12)
    out="$CACHE/pause-3.10-$key.tar"
    if [[ ! -s $out ]]; then
      mkdir -p "$work/rootfs"
      cc -static -Os -s -o "$work/rootfs/pause" "$here/lab-images/pause.c"
      oci_archive "$work/rootfs" registry.k8s.io/pause:3.10 '["/pause"]' '[]' "$out"
    fi
    ;;
  echo)
    [[ $# -eq 2 && -x $2 ]] || usage
    bin=$(readlink -f "$2")
    key=$(cat "$bin" "$0" | sha256sum | cut -c1-12)
    out="$CACHE/echo-$key.tar"
    if [[ ! -s $out ]]; then
      find "$CACHE" -maxdepth 1 -name 'echo-*.tar' -mtime +0 -delete
      mkdir -p "$work/rootfs/tmp"
      chmod 1777 "$work/rootfs/tmp"
      cp "$bin" "$work/rootfs/pylon-dev"
      # Every library ldd resolves, and the dynamic loader, at their paths on this machine.
      ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u |
        while read -r lib; do
          mkdir -p "$work/rootfs$(dirname "$lib")"
          cp -L "$lib" "$work/rootfs$lib"
        done
      oci_archive "$work/rootfs" docker.io/library/pylon-lab-echo:lab '["/pylon-dev","lab","serve"]' \
        '["--port","8080","--text","pylon-lab-echo"]' "$out"
    fi
    ;;
  *) usage ;;
esac
echo "$out"
