#!/usr/bin/env bash
# One-time set-up on a fresh Debian machine: system packages (apt-get), then node modules (npm ci). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEBIAN_FRONTEND=noninteractive

# chromium: browser sessions; bubblewrap: sandbox isolation; redis-server: the shared-state backend and its tests.
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
# redis-sentinel: the failover test (test/state/failover.test.ts) runs a primary, replicas and three sentinels.
command -v redis-sentinel >/dev/null 2>&1 || need+=(redis-sentinel)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
# nginx + openssl: the TLS-terminating proxy test (test/gateway/tls-proxy.test.ts, certificate made at test time) and
# the reference proxy bench/proxy.ts measures Tollgate against (started by the test or bench, never as a service).
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# sudo: the sandboxes' shared userland (/usr) gives their `ubuntu` user passwordless sudo, as the real service does.
[ -x /usr/bin/sudo ] || need+=(sudo)
# lxcfs: a sandbox's /proc/meminfo and free show its memMiB; e2fsprogs (mkfs.ext4): its / is a disk of diskSizeMiB.
# (apt does not start lxcfs here; the emulator runs its own.) openssl (above) also signs the local web's TLS key.
[ -x /usr/bin/lxcfs ] || need+=(lxcfs)
[ -x /usr/sbin/mkfs.ext4 ] || [ -x /sbin/mkfs.ext4 ] || need+=(e2fsprogs)
# softhsm2: a real PKCS#11 token for the HSM wallet signer's tests (test/payments/pkcs11-signer.test.ts); g++, make and
# python3 build the optional pkcs11js addon at npm ci (node-gyp, against Debian's Node headers: no download).
command -v softhsm2-util >/dev/null 2>&1 || need+=(softhsm2)
command -v g++ >/dev/null 2>&1 || need+=(g++)
command -v make >/dev/null 2>&1 || need+=(make)
command -v python3 >/dev/null 2>&1 || need+=(python3)
if ((${#need[@]})); then
  echo "setup: installing ${need[*]} with apt-get…"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# promtool (Prometheus's linter, for `promtool check metrics` in test/operators/metrics.test.ts): only its binary, taken
# from Debian's prometheus package (no server installed or started); skipped with a note when it cannot be fetched.
if ! command -v promtool >/dev/null 2>&1; then
  echo "setup: extracting promtool from Debian's prometheus package…"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  tmp="$(mktemp -d)"
  if (cd "$tmp" && { apt-get download prometheus >/dev/null 2>&1 || { $SUDO apt-get update -q >/dev/null && apt-get download prometheus >/dev/null; }; } &&
    dpkg-deb -x prometheus_*.deb x && $SUDO install -m 0755 x/usr/bin/promtool /usr/local/bin/promtool); then
    echo "setup: promtool $(promtool --version 2>&1 | head -1 | awk '{print $3}')"
  else
    echo "setup: promtool unavailable; the metrics test skips its promtool check"
  fi
  rm -rf "$tmp"
fi

# python3 with pydantic 2: the Python SDK's models (its snapshot in ../shared/reference/python-sdk) are read and run
# by test/python/*.py (docs/sdk-drift.md). The machine image has pydantic 2 (PyPI is out of reach; Debian's is 1.10):
# without it, it is installed from the image's local wheel store when there is one, else those tests fail naming it.
if command -v python3 >/dev/null 2>&1 && ! python3 -c 'import pydantic, sys; sys.exit(0 if pydantic.VERSION.startswith("2") else 1)' 2>/dev/null; then
  if [ -d /opt/pypi/files ] && python3 -m pip install -q --no-index --find-links /opt/pypi/files 'pydantic>=2,<3' 2>/dev/null; then
    echo "setup: pydantic $(python3 -c 'import pydantic; print(pydantic.VERSION)') from the local wheel store"
  else
    echo "setup: python3 has no pydantic 2; the Python SDK tests (test/gateway/python-*.test.ts) will fail naming it"
  fi
fi

# Never --omit=optional: workerd, anvil, esbuild and node-pty ship their binaries as optional platform packages.
# node-gyp builds native addons against the installed Node's headers instead of downloading them (no network here).
[ -f /usr/include/node/node.h ] && export npm_config_nodedir=/usr
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci…"
  npm ci --no-audit --no-fund
fi
# The compiled gateway and emulator (dist/, emulator/dist/) that `npm start` and bin/tollgate.js run; incremental, so a
# second run with nothing changed takes about a second. Tests run the TypeScript source and need no build.
echo "setup: npm run build…"
npm run build --silent
echo "setup: done"
