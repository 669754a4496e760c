// PTY through Tollgate vs straight to the emulator's runtime, with the unmodified SDK on both sides, same run:
// keystroke echo round trip (one at a time) and bulk output throughput. Prints a markdown table with ratios.
// The gateway runs as its own process (`tollgate start`); the emulator and this client share one.
import { randomBytes } from "node:crypto";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startEmulator } from "../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../src/identity/tenants.js";
import { startGatewayProcess } from "../test/helpers/gateway-process.js";

const KEYS = Number(process.env.BENCH_PTY_KEYS ?? 400);
const BYTES = Number(process.env.BENCH_PTY_BYTES ?? 20_000_000);
const ROUNDS = Number(process.env.BENCH_PTY_ROUNDS ?? 2);

async function measure(hb: Hyperbrowser, sandboxId: string) {
  const sbx = await hb.sandboxes.connect(sandboxId);
  const t = await sbx.terminal.create({ command: "bash", args: ["--norc", "--noprofile"], rows: 40, cols: 200 });
  const conn = await t.attach();
  let received = 0;
  let tail = "";
  let waiter: { test: () => boolean; resolve: () => void } | undefined;
  const reader = (async () => {
    for await (const e of conn.events()) {
      if (e.type !== "output") continue;
      received += e.data.length;
      tail = (tail + e.data).slice(-64);
      if (waiter?.test()) waiter.resolve(), (waiter = undefined);
    }
  })();
  const until = (test: () => boolean) => new Promise<void>((resolve) => (test() ? resolve() : (waiter = { test, resolve })));
  try {
    await conn.write("stty -echoctl; PS1=''\r");
    await new Promise((r) => setTimeout(r, 300));
    const lat: number[] = [];
    for (let i = 0; i < KEYS; i++) {
      if (i > 0 && i % 50 === 0) {
        // Clear the typed line before it wraps (wrapping adds escape sequences after the echo); not timed.
        await conn.write("\x15");
        await new Promise((r) => setTimeout(r, 50));
      }
      const ch = String.fromCharCode(97 + (i % 26));
      const mark = received;
      const t0 = performance.now();
      await conn.write(ch);
      await until(() => received > mark && tail.endsWith(ch));
      lat.push(performance.now() - t0);
    }
    await conn.write("\x15"); // clear the typed line
    lat.sort((a, b) => a - b);
    const start = received;
    const t0 = performance.now();
    await conn.write(`head -c ${BYTES} /dev/zero | tr '\\0' x; echo; echo BULK''DONE\r`);
    await until(() => tail.includes("BULKDONE"));
    const seconds = (performance.now() - t0) / 1000;
    return { p50: lat[Math.floor(lat.length / 2)]!, p99: lat[Math.floor(lat.length * 0.99)]!, mbps: (received - start) / 1e6 / seconds };
  } finally {
    await conn.close();
    await reader.catch(() => {});
    await t.kill().catch(() => {});
  }
}

const emulator = await startEmulator({ modules: ["sandboxes"] });
const key = generateTenantKey();
const runtimePort = new URL(emulator.runtimeUrl).port;
const gw = await startGatewayProcess(
  {
    server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
    upstream: { baseUrl: emulator.controlUrl, allowedHosts: [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`] },
    payments: { enabled: false },
    tenants: [{ id: "bench", keys: [{ hash: await hashTenantKey(key) }] }],
  },
  { TOLLGATE_UPSTREAM_API_KEY: emulator.apiKey, TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex") },
);
try {
  const viaGateway = new Hyperbrowser({ apiKey: key, baseUrl: gw.url });
  const direct = new Hyperbrowser({ apiKey: emulator.apiKey, baseUrl: emulator.controlUrl });
  const sbx = await viaGateway.sandboxes.create({ imageName: "debian" });
  const d: Array<Awaited<ReturnType<typeof measure>>> = [];
  const g: typeof d = [];
  for (let r = 0; r < ROUNDS; r++) {
    d.push(await measure(direct, sbx.id));
    g.push(await measure(viaGateway, sbx.id));
  }
  const best = (xs: typeof d) => ({
    p50: Math.min(...xs.map((x) => x.p50)),
    p99: Math.min(...xs.map((x) => x.p99)),
    mbps: Math.max(...xs.map((x) => x.mbps)),
  });
  const [bd, bg] = [best(d), best(g)];
  const f = (n: number, digits = 2) => n.toFixed(digits);
  console.log(`\n## PTY relay (${KEYS} keystroke echoes one at a time, ${BYTES / 1e6} MB of output; best of ${ROUNDS} rounds)\n`);
  console.log("| path | p50 echo (ms) | p99 (ms) | output MB/s |\n|---|---|---|---|");
  console.log(`| SDK direct to emulator runtime (baseline) | ${f(bd.p50, 3)} | ${f(bd.p99, 3)} | ${f(bd.mbps)} |`);
  console.log(`| SDK through Tollgate | ${f(bg.p50, 3)} | ${f(bg.p99, 3)} | ${f(bg.mbps)} |`);
  console.log(`| ratio gateway / direct | ${f(bg.p50 / bd.p50)}× | ${f(bg.p99 / bd.p99)}× | ${f(bg.mbps / bd.mbps)}× |`);
  await sbx.stop();
} finally {
  await gw.stop();
  await emulator.close();
}
