#!/usr/bin/env bash
# Builds Pylon's images from the Dockerfile at the root, as docs/install.md documents them, on a
# machine with no Docker engine and no registry: buildah (`bud --pull=never --isolation chroot`)
# on the bases `debian:bookworm-slim` (and `debian:bookworm` for --from-source) made by
# debootstrap. Writes each image as an OCI archive and prints their paths, in the order of the
# targets, on its last line. Import one into containerd with
#   ctr -n k8s.io images import --base-name docker.io/library/pylon ARCHIVE        (pylon:TAG)
#   ctr -n k8s.io images import --base-name docker.io/library/pylon-bird ARCHIVE   (pylon-bird:TAG)
#
#   scripts/image.sh [--from-source] [--binary PATH] [--tag TAG] [TARGET...]
#
#   TARGET         pylon (the Dockerfile's default target: built with no --target) or bird
#                  (--target bird); default: pylon bird
#   --binary PATH  the pylon binary that replaces the Dockerfile's `build` stage (default
#                  build/pylon, from scripts/build.sh); stripped, as that stage strips it
#   --from-source  no replacement: the `build` stage compiles Pylon (a Release build, 10+ min on
#                  2 cores), exactly `docker build .`
#   --tag TAG      the tag in the archive (default: the project version in CMakeLists.txt)
#   PYLON_K8S_CACHE  cache root (default /var/cache/pylon); everything goes under its images/
#
# Cached outside the checkout, in $PYLON_K8S_CACHE/images: the bases (once: debootstrap, about
# 85 s each), buildah's storage with its layer cache (`--layers`: the apt-get of a stage runs
# again only when the Dockerfile or a base changes), and the archives, each keyed by everything
# it is made of (Dockerfile, .dockerignore, target, tag, base, and the binary or the source
# tree), so an unchanged input returns at once. Root; installs its packages (scripts/deps.sh
# image). One run at a time per cache (a lock).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)

from_source=0
binary=$repo/build/pylon
tag=$(sed -nE 's/^project\(pylon VERSION ([0-9.]+).*/\1/p' "$repo/CMakeLists.txt")
targets=()
while (($#)); do
  case $1 in
    --from-source) from_source=1 ;;
    --binary) binary=$(realpath -m -- "${2:?--binary PATH}"); shift ;;
    --tag) tag=${2:?--tag TAG}; shift ;;
    pylon | bird) targets+=("$1") ;;
    *) echo "usage: scripts/image.sh [--from-source] [--binary PATH] [--tag TAG] [pylon|bird]..." >&2
       exit 2 ;;
  esac
  shift
done
((${#targets[@]})) || targets=(pylon bird)
cd "$repo"
[[ $(id -u) -eq 0 ]] || { echo "pylon: scripts/image.sh needs root" >&2; exit 1; }
bash scripts/deps.sh image >&2

CACHE=${PYLON_K8S_CACHE:-/var/cache/pylon}/images
MIRROR=${PYLON_DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${PYLON_DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
mkdir -p "$CACHE/bases"
exec 9>"$CACHE/.lock"
flock -w 3600 9 || { echo "pylon: $CACHE/.lock is held by another image build" >&2; exit 1; }

sha() { sha256sum | cut -c1-64; }
# buildah on a storage of its own (not the machine's /var/lib/containers), one per cache.
runroot=/run/pylon-images-$(echo "$CACHE" | sha | cut -c1-12)
bah() {
  buildah --root "$CACHE/storage" --runroot "$runroot" --storage-driver overlay "$@"
}
image_id() { bah inspect --type image --format '{{.FromImageID}}' "$1" 2>/dev/null; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# make_base REF SLIM: the Debian 12 base REF (docker.io/library/debian:...), as the official one
# is made: debootstrap's minbase, the apt sources of bookworm, bookworm-updates and
# bookworm-security, Cmd bash; SLIM adds dpkg's path excludes of documentation and locales.
make_base() {
  local ref=$1 slim=$2
  local recipe="1 bookworm minbase slim=$slim $MIRROR $SECURITY_MIRROR"
  local marker="$CACHE/bases/${ref##*/}.recipe"
  if [[ -f $marker && $(cat "$marker") == "$recipe" ]] && image_id "$ref" >/dev/null; then
    return
  fi
  echo "pylon: making the base $ref with debootstrap (first time only)" >&2
  local rootfs="$work/rootfs-${ref##*:}"
  mkdir -p "$rootfs"
  if ((slim)); then
    mkdir -p "$rootfs/etc/dpkg/dpkg.cfg.d"
    cat >"$rootfs/etc/dpkg/dpkg.cfg.d/pylon-slim" <<'EOF'
# The slim base (scripts/image.sh): no documentation, manual pages or translations.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
EOF
  fi
  debootstrap --variant=minbase bookworm "$rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 || {
    tail -n 20 "$work/debootstrap.log" >&2
    return 1
  }
  rm -f "$rootfs/etc/apt/sources.list"
  cat >"$rootfs/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  if ((slim)); then
    rm -rf "$rootfs"/usr/share/doc/*/[!c]* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
  fi
  rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/log/*.log \
    "$rootfs"/var/cache/apt/archives/*.deb
  local ctr mnt
  ctr=$(bah from --pull=never scratch)
  mnt=$(bah mount "$ctr")
  tar -C "$rootfs" -cf - . | tar -C "$mnt" -xpf -
  bah umount "$ctr" >/dev/null
  bah config --cmd bash \
    --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$ctr"
  bah commit --rm -q "$ctr" "$ref" >/dev/null
  rm -rf "$rootfs"
  echo "$recipe" >"$marker"
}

make_base docker.io/library/debian:bookworm-slim 1
if ((from_source)); then
  make_base docker.io/library/debian:bookworm 0
  # The build context as git sees it (tracked and untracked files, not the ignored ones).
  input="source $( (git ls-files -z -co --exclude-standard | sort -z |
    xargs -0 sha256sum 2>/dev/null || true) | sha)"
elif [[ " ${targets[*]} " == *" pylon "* ]]; then
  [[ -x $binary ]] || { echo "pylon: no $binary (bash scripts/build.sh builds it)" >&2; exit 1; }
  # The replacement of the `build` stage: DIR/build/pylon, stripped as that stage does.
  mkdir -p "$work/stage/build"
  strip -o "$work/stage/build/pylon" "$binary"
  input="binary $(sha <"$work/stage/build/pylon")"
fi

out=()
for target in "${targets[@]}"; do
  name=pylon
  args=()
  if [[ $target == bird ]]; then
    name=pylon-bird
    args=(--target bird)
  fi
  [[ $target == pylon && $from_source -eq 0 ]] && args+=(--build-context "build=$work/stage")
  key=$({
    echo "$target $tag"
    cat Dockerfile .dockerignore
    image_id docker.io/library/debian:bookworm-slim
    if ((from_source)); then image_id docker.io/library/debian:bookworm; fi
    if [[ $target == pylon ]]; then echo "$input"; fi
  } | sha)
  archive="$CACHE/$name/$tag-${key:0:16}.tar"
  mkdir -p "$CACHE/$name"
  if [[ ! -f $archive ]]; then
    echo "pylon: building $name:$tag (${args[*]:-the default target})" >&2
    ref="localhost/pylon-image/$name:${key:0:16}"
    bah bud --pull=never --isolation chroot --layers -q "${args[@]}" -f Dockerfile -t "$ref" \
      "$repo" >&2
    if [[ $target == pylon && $from_source -eq 0 ]]; then
      # The image holds this binary: the default target is the product, and the layer cache kept
      # no other binary.
      ctr=$(bah from --pull=never "$ref")
      mnt=$(bah mount "$ctr")
      same=0
      cmp -s "$mnt/usr/local/bin/pylon" "$work/stage/build/pylon" && same=1
      bah rm "$ctr" >/dev/null
      if ((!same)); then
        echo "pylon: the image of the Dockerfile's default target does not hold $binary as" \
          "/usr/local/bin/pylon (its entrypoint:" \
          "$(bah inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$ref"))" >&2
        exit 1
      fi
    fi
    bah push -q "$ref" "oci-archive:$archive.tmp:$tag" >&2
    mv "$archive.tmp" "$archive"
    # Keep the two newest archives of each image (and older ones used in the last hour: another
    # checkout may be reading one), and in the storage only their images and the layers below.
    ls -t "$CACHE/$name"/*.tar 2>/dev/null | tail -n +3 |
      xargs -r -I{} find {} -maxdepth 0 -mmin +60 -delete
    for old in $(bah images --format '{{.Name}}:{{.Tag}}' --filter "reference=localhost/pylon-image/$name"); do
      compgen -G "$CACHE/$name/*-${old##*:}.tar" >/dev/null || bah rmi -f "$old" >/dev/null 2>&1 || true
    done
    bah rmi --prune >/dev/null 2>&1 || true
  fi
  touch "$archive"
  out+=("$archive")
done
echo "${out[*]}"
