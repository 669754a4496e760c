#!/usr/bin/env bash
# Finds the podman settings this host needs to run (and build) containers, and writes them as a containers.conf when
# the defaults do not work. Prints the file's path on stdout (nothing when podman's defaults work); use it as
#   export CONTAINERS_CONF="$(./deploy/podman-conf.sh)"      # then podman build/run and podman-compose as usual
# or install it for every podman call on the machine with --system (/etc/containers/containers.conf, kept if present).
#
# What it tries, in order, each with a throwaway `podman run --rm <base> true`:
#   1. podman's defaults (crun, podman's default limits);
#   2. crun with explicit limits: without CAP_SYS_RESOURCE (as in most CI containers) podman's default open-file and
#      process limits (raised above the current ones) are refused ("setrlimit RLIMIT_NOFILE: Operation not permitted"),
#      so the containers get this shell's own hard limits (capped at 65536 files, 4096 processes);
#   3. runc with those limits: crun refuses hosts whose cgroups v1 and v2 are mounted side by side ("cgroups in hybrid
#      mode not supported"); runc (Debian's package, installed with apt-get when missing) runs there.
# Environment: TOLLGATE_PODMAN_IMAGE (the image to probe; default localhost/tollgate-base:<codename>, made by
# deploy/base-image.sh), TOLLGATE_PODMAN_CONF (where to write; default deploy/podman/containers.conf).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. /etc/os-release
image="${TOLLGATE_PODMAN_IMAGE:-localhost/tollgate-base:${VERSION_CODENAME:-bookworm}}"
out="${TOLLGATE_PODMAN_CONF:-$here/podman/containers.conf}"
system=0; [ "${1:-}" = "--system" ] && system=1

probe() { CONTAINERS_CONF="$1" podman run --rm --network none "$image" true >/dev/null 2>"$1.err"; }
# podman as configured now (its own files, or the CONTAINERS_CONF already exported).
probe_current() { podman run --rm --network none "$image" true >/dev/null 2>"$1.err"; }
write() { # runtime nofile nproc → $out
  mkdir -p "$(dirname "$out")"
  cat >"$out.tmp" <<CONF
# Written by deploy/podman-conf.sh for this host (see there); podman reads it through CONTAINERS_CONF.
[containers]
default_ulimits = ["nofile=$2:$2", "nproc=$3:$3"]

[engine]
runtime = "$1"
CONF
  mv "$out.tmp" "$out"
}

podman image exists "$image" || { echo "podman-conf: $image is missing (run ./deploy/base-image.sh first)" >&2; exit 1; }
empty="$(mktemp)"; trap 'rm -f "$empty" "$empty.err" "$out.err"' EXIT
if probe_current "$empty"; then
  if [ -n "${CONTAINERS_CONF:-}" ]; then echo "podman-conf: the CONTAINERS_CONF set works" >&2; echo "$CONTAINERS_CONF"
  else echo "podman-conf: podman's defaults work here; nothing to set" >&2; fi
  exit 0
fi
echo "podman-conf: podman's defaults fail here: $(tail -1 "$empty.err")" >&2

hard_nofile=$(ulimit -Hn); [ "$hard_nofile" = unlimited ] && hard_nofile=65536
hard_nproc=$(ulimit -Hu); [ "$hard_nproc" = unlimited ] && hard_nproc=4096
nofile=$((hard_nofile < 65536 ? hard_nofile : 65536))
nproc=$((hard_nproc < 4096 ? hard_nproc : 4096))

ok=""
for runtime in crun runc; do
  if [ "$runtime" = runc ] && ! command -v runc >/dev/null 2>&1; then
    echo "podman-conf: installing runc with apt-get…" >&2
    SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
    $SUDO apt-get install -y -q --no-install-recommends runc >/dev/null 2>&1 ||
      { $SUDO apt-get update -q >/dev/null && $SUDO apt-get install -y -q --no-install-recommends runc >/dev/null; }
  fi
  write "$runtime" "$nofile" "$nproc"
  if probe "$out"; then ok="$runtime"; break; fi
  echo "podman-conf: $runtime with nofile=$nofile nproc=$nproc fails: $(tail -1 "$out.err")" >&2
done
if [ -z "$ok" ]; then
  rm -f "$out"
  echo "podman-conf: no runtime starts a container here" >&2
  exit 1
fi
echo "podman-conf: $ok with nofile=$nofile nproc=$nproc works; wrote $out" >&2
if [ "$system" = 1 ]; then
  if [ -e /etc/containers/containers.conf ]; then
    echo "podman-conf: /etc/containers/containers.conf exists; left as is (merge $out into it by hand)" >&2
  else
    install -m 0644 "$out" /etc/containers/containers.conf
    echo "podman-conf: installed as /etc/containers/containers.conf (every podman call on this machine uses it)" >&2
  fi
fi
echo "$out"
