#!/usr/bin/env node
// The image's HEALTHCHECK: exits 0 when GET /_tollgate/ready answers 200 (ready, or degraded with payments at risk),
// 1 otherwise (503 not_ready, refused, or no answer in 2.5 s). TOLLGATE_HEALTHCHECK_URL overrides the address; with
// server.publicHosts set, list "127.0.0.1" in it (or point this at a listed host).
const url = process.env.TOLLGATE_HEALTHCHECK_URL || "http://127.0.0.1:8787/_tollgate/ready";
try {
  const r = await fetch(url, { signal: AbortSignal.timeout(2500) });
  process.stdout.write(`${r.status} ${(await r.text()).slice(0, 300)}\n`);
  process.exit(r.status === 200 ? 0 : 1);
} catch (e) {
  process.stdout.write(`unreachable: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
