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
command -v ip >/dev/null 2>&1 || need+=(iproute2)
# nginx + openssl: the TLS-terminating proxy test (test/gateway/tls-proxy.test.ts, certificate made at test time) and
# the reference proxy bench/proxy.ts measures Tollgate against (started by the test or bench, never as a service).
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || need+=(nginx)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# sudo: the sandboxes' shared userland (/usr) gives their `ubuntu` user passwordless sudo, as the real service does.
[ -x /usr/bin/sudo ] || need+=(sudo)
if ((${#need[@]})); then
  echo "setup: installing ${need[*]} with apt-get…"
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# Never --omit=optional: workerd, anvil, esbuild and node-pty ship their binaries as optional platform packages.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: npm ci…"
  npm ci --no-audit --no-fund
fi
# The compiled gateway and emulator (dist/, emulator/dist/) that `npm start` and bin/tollgate.js run; incremental, so a
# second run with nothing changed takes about a second. Tests run the TypeScript source and need no build.
echo "setup: npm run build…"
npm run build --silent
echo "setup: done"
