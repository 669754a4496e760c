// Runtime-plane proxy cost: req/s and p50/p99 through Tollgate vs direct to the emulator's runtime vs a plain hono/proxy
// pass-through (all in one run, gateway and baseline each in their own process), then 1 GiB streamed up and down
// through the gateway and directly, with the gateway's RSS sampled during the transfer.
import autocannon from "autocannon";
import { spawn } from "node:child_process";
import { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { request } from "undici";
import { measureTransfer, startChildStack } from "../test/gateway/sandbox-child.js";

const DURATION = Number(process.env.BENCH_SECONDS ?? 8);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32);
const STREAM_BYTES = Number(process.env.BENCH_STREAM_MIB ?? 1024) * 1024 * 1024;
const CHUNK = Buffer.alloc(1024 * 1024, 0x62);

async function cannon(url: string, headers: Record<string, string>) {
  await autocannon({ url, headers, connections: CONNECTIONS, duration: 1 });
  const r = await autocannon({ url, headers, connections: CONNECTIONS, duration: DURATION });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors };
}

async function spawnHonoProxy(upstream: string, token: string) {
  const child = spawn(process.execPath, ["--import", "tsx", fileURLToPath(new URL("./hono-proxy-process.ts", import.meta.url))], {
    env: { ...process.env, PROXY_UPSTREAM: upstream, PROXY_TOKEN: token },
    stdio: ["ignore", "pipe", "inherit"],
    detached: true,
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d) => ((out += d), /READY (\d+)/.test(out) && resolve(Number(/READY (\d+)/.exec(out)![1]))));
    child.once("exit", (c) => reject(new Error(`hono proxy exited ${c}`)));
  });
  return {
    port,
    stop: () => {
      try {
        process.kill(-child.pid!, "SIGTERM");
      } catch {
        /* gone */
      }
    },
  };
}

function* chunks(total: number) {
  for (let sent = 0; sent < total; sent += CHUNK.length) yield CHUNK;
}

async function upload(url: string, headers: Record<string, string>) {
  const res = await request(url, { method: "PUT", headers, body: Readable.from(chunks(STREAM_BYTES)) });
  const body = (await res.body.json()) as { bytesWritten: number };
  if (res.statusCode !== 200) throw new Error(`upload ${res.statusCode}`);
  return body.bytesWritten;
}

async function download(url: string, headers: Record<string, string>) {
  const res = await request(url, { headers });
  if (res.statusCode !== 200) throw new Error(`download ${res.statusCode}`);
  let n = 0;
  for await (const c of res.body) n += (c as Buffer).length;
  return n;
}

const s = await startChildStack();
let honoProxy: Awaited<ReturnType<typeof spawnHonoProxy>> | undefined;
try {
  const sbx = await s.hb.sandboxes.create({ imageName: "node" });
  await sbx.exec("true");
  const gwToken = (
    (await (
      await request(`http://127.0.0.1:${s.child.port}/api/sandbox/${sbx.id}`, { headers: { "x-api-key": s.key } })
    ).body.json()) as any
  ).token;
  const up = (await (
    await request(`${s.emu.controlUrl}/api/sandbox/${sbx.id}`, { headers: { "x-api-key": s.emu.apiKey } })
  ).body.json()) as any;
  const runtime = new URL(s.emu.runtimeUrl);
  honoProxy = await spawnHonoProxy(s.emu.runtimeUrl, up.token);

  const path = `/sandbox/${sbx.id}/processes`;
  const direct = await cannon(`${s.emu.runtimeUrl}${path}`, { authorization: `Bearer ${up.token}` });
  const viaHono = await cannon(`http://127.0.0.1:${honoProxy.port}${path}`, {});
  const viaGateway = await cannon(`http://127.0.0.1:${s.child.port}${path}`, {
    authorization: `Bearer ${gwToken}`,
    host: `localhost:${s.child.port}`,
  });

  const row = (name: string, r: typeof direct) =>
    `| ${name} | ${Math.round(r.rps)} | ${r.p50} | ${r.p99} | ${(r.rps / direct.rps).toFixed(2)} | ${r.bad} |`;
  console.log(
    `\n## Runtime proxy: GET ${"/sandbox/<id>/processes"} (${CONNECTIONS} connections, ${DURATION} s, Node ${process.versions.node})\n`,
  );
  console.log("| path | req/s | p50 ms | p99 ms | vs direct | non-2xx/errors |\n|---|---|---|---|---|---|");
  console.log(row("direct to emulator runtime (baseline)", direct));
  console.log(row("plain hono/proxy pass-through", viaHono));
  console.log(row("Tollgate (token check + custody + undici)", viaGateway));
  console.log(`\nTollgate / hono/proxy: ${(viaGateway.rps / viaHono.rps).toFixed(2)}x`);

  const gwHeaders = { authorization: `Bearer ${gwToken}`, host: `localhost:${s.child.port}` };
  const upHeaders = { authorization: `Bearer ${up.token}` };
  const gwBase = `http://127.0.0.1:${s.child.port}/sandbox/${sbx.id}/files`;
  const directBase = `${runtime.origin}/sandbox/${sbx.id}/files`;
  const baseline = s.child.rssBytes();
  const dUp = await measureTransfer(s.child, STREAM_BYTES, () => upload(`${directBase}/upload?path=/home/ubuntu/d.bin`, upHeaders));
  const dDown = await measureTransfer(s.child, STREAM_BYTES, () => download(`${directBase}/download?path=/home/ubuntu/d.bin`, upHeaders));
  const gUp = await measureTransfer(s.child, STREAM_BYTES, () => upload(`${gwBase}/upload?path=/home/ubuntu/g.bin`, gwHeaders));
  const gDown = await measureTransfer(s.child, STREAM_BYTES, () => download(`${gwBase}/download?path=/home/ubuntu/g.bin`, gwHeaders));
  const mib = (b: number) => (b / 1024 / 1024).toFixed(0);
  console.log(`\n## Streaming ${mib(STREAM_BYTES)} MiB (gateway RSS before: ${mib(baseline)} MiB)\n`);
  console.log("| transfer | direct MB/s | Tollgate MB/s | ratio | gateway peak RSS MiB |\n|---|---|---|---|---|");
  console.log(
    `| upload (PUT files/upload) | ${dUp.mbPerSec.toFixed(0)} | ${gUp.mbPerSec.toFixed(0)} | ${(gUp.mbPerSec / dUp.mbPerSec).toFixed(2)} | ${mib(gUp.peakRss)} |`,
  );
  console.log(
    `| download (GET files/download) | ${dDown.mbPerSec.toFixed(0)} | ${gDown.mbPerSec.toFixed(0)} | ${(gDown.mbPerSec / dDown.mbPerSec).toFixed(2)} | ${mib(gDown.peakRss)} |`,
  );
  await sbx.stop();
} finally {
  honoProxy?.stop();
  await s.close();
}
