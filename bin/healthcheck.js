#!/usr/bin/env node
// The image's HEALTHCHECK: exits 0 when GET /_tollgate/ready answers 200 (ready, or degraded with payments at risk),
// 1 otherwise (503 not_ready, refused, or no answer in 2.5 s). Where: TOLLGATE_HEALTHCHECK_URL when set; else the URL
// `tollgate start` wrote to TOLLGATE_PORT_FILE once it listened (the image sets it: whatever port the config or
// --port chose, and never another gateway's on a shared host network); else 127.0.0.1:8787. With server.publicHosts
// set, list "127.0.0.1" in it (or point TOLLGATE_HEALTHCHECK_URL at a listed host).
import { readFileSync } from "node:fs";

function target() {
  if (process.env.TOLLGATE_HEALTHCHECK_URL) return process.env.TOLLGATE_HEALTHCHECK_URL;
  const file = process.env.TOLLGATE_PORT_FILE;
  if (file) {
    let listening;
    try {
      listening = readFileSync(file, "utf8").trim();
    } catch {
      return undefined; // not listening (yet, or any more): unhealthy
    }
    // "http://0.0.0.0:9000" (or "::"): probed on loopback, at its port.
    const port = /:(\d+)\/?$/.exec(listening)?.[1];
    return port ? `http://127.0.0.1:${port}/_tollgate/ready` : undefined;
  }
  return "http://127.0.0.1:8787/_tollgate/ready";
}

const url = target();
if (!url) {
  process.stdout.write(`not listening: ${process.env.TOLLGATE_PORT_FILE} is not there\n`);
  process.exit(1);
}
try {
  const r = await fetch(url, { signal: AbortSignal.timeout(2500) });
  process.stdout.write(`${r.status} ${(await r.text()).slice(0, 300)}\n`);
  process.exit(r.status === 200 ? 0 : 1);
} catch (e) {
  process.stdout.write(`unreachable: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
