// CDP through Tollgate's relay vs straight to the emulator's wsEndpoint, same browser, same run: round-trip latency of
// Runtime.evaluate("1+1") one at a time, and messages/s with many in flight. Prints a markdown table with ratios.
// A third path: a tenant whose policy has a `domains` rule, so its connection carries the CDP guard
// (src/sessions/cdp-guard.ts: the navigation floor, the fill's redaction); its session is the same emulator's.
// The gateway runs as its own process (`tollgate start`), as deployed; the emulator and this client share one.
import { randomBytes } from "node:crypto";
import WebSocket from "ws";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { startEmulator } from "../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../src/identity/tenants.js";
import { startGatewayProcess } from "../test/helpers/gateway-process.js";

const SEQ = Number(process.env.BENCH_CDP_SEQ ?? 2000);
const PIPE = Number(process.env.BENCH_CDP_PIPE ?? 20000);
const WINDOW = Number(process.env.BENCH_CDP_WINDOW ?? 64);
const ROUNDS = Number(process.env.BENCH_CDP_ROUNDS ?? 3);

class Cdp {
  private next = 1;
  private readonly waiting = new Map<number, (m: any) => void>();
  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (data) => {
      const m = JSON.parse(String(data));
      const w = m.id !== undefined ? this.waiting.get(m.id) : undefined;
      if (w) this.waiting.delete(m.id), w(m);
    });
  }
  static open(url: string): Promise<Cdp> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 256 * 1024 * 1024 });
      ws.once("open", () => resolve(new Cdp(ws)));
      ws.once("error", reject);
    });
  }
  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<any> {
    const id = this.next++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
    });
  }
  close() {
    this.ws.close();
  }
}

/** Attaches to a fresh blank tab (flattened session) and returns a function evaluating 1+1 in it. */
async function evaluator(cdp: Cdp) {
  const { result: t } = await cdp.send("Target.createTarget", { url: "about:blank" });
  const { result: a } = await cdp.send("Target.attachToTarget", { targetId: t.targetId, flatten: true });
  return async () => {
    const r = await cdp.send("Runtime.evaluate", { expression: "1+1", returnByValue: true }, a.sessionId);
    if (r.result?.result?.value !== 2) throw new Error(`unexpected answer ${JSON.stringify(r)}`);
  };
}

async function measure(url: string) {
  const cdp = await Cdp.open(url);
  try {
    const evalOnce = await evaluator(cdp);
    for (let i = 0; i < 200; i++) await evalOnce(); // warm
    const lat: number[] = [];
    for (let i = 0; i < SEQ; i++) {
      const t = performance.now();
      await evalOnce();
      lat.push(performance.now() - t);
    }
    lat.sort((a, b) => a - b);
    let sent = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: WINDOW }, async () => {
        while (sent < PIPE) {
          sent++;
          await evalOnce();
        }
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    return { p50: lat[Math.floor(lat.length / 2)]!, p99: lat[Math.floor(lat.length * 0.99)]!, perSecond: PIPE / seconds };
  } finally {
    cdp.close();
  }
}

const best = (xs: Array<Awaited<ReturnType<typeof measure>>>) => ({
  p50: Math.min(...xs.map((x) => x.p50)),
  p99: Math.min(...xs.map((x) => x.p99)),
  perSecond: Math.max(...xs.map((x) => x.perSecond)),
});

const emulator = await startEmulator({ modules: ["sessions"] });
const key = generateTenantKey();
const guardedKey = generateTenantKey();
const gw = await startGatewayProcess(
  {
    server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
    upstream: { baseUrl: emulator.controlUrl },
    payments: { enabled: false },
    // A bench remembers nothing across runs: the memory backend, which `start` takes only as a rehearsal.
    state: { backend: "memory", rehearsal: true },
    tenants: [
      { id: "bench", keys: [{ hash: await hashTenantKey(key) }] },
      { id: "guarded", keys: [{ hash: await hashTenantKey(guardedKey) }], policy: { domains: { deny: ["denied.example"] } } },
    ],
  },
  { TOLLGATE_UPSTREAM_API_KEY: emulator.apiKey, TOLLGATE_TOKEN_SECRET: randomBytes(32).toString("hex") },
);
try {
  const hb = new Hyperbrowser({ apiKey: key, baseUrl: gw.url });
  const session = await hb.sessions.create();
  const guardedHb = new Hyperbrowser({ apiKey: guardedKey, baseUrl: gw.url });
  const guardedSession = await guardedHb.sessions.create();
  const upstream = await fetch(`${emulator.controlUrl}/api/session/${session.id}`, { headers: { "x-api-key": emulator.apiKey } }).then(
    (r) => r.json(),
  );
  const direct: Array<Awaited<ReturnType<typeof measure>>> = [];
  const gateway: typeof direct = [];
  const guarded: typeof direct = [];
  // Interleaved rounds so that drift in the machine's load hits both paths alike.
  for (let r = 0; r < ROUNDS; r++) {
    direct.push(await measure(upstream.wsEndpoint));
    gateway.push(await measure(session.wsEndpoint));
    guarded.push(await measure(guardedSession.wsEndpoint));
  }
  const d = best(direct);
  const g = best(gateway);
  const q = best(guarded);
  const f = (n: number, digits = 0) => n.toFixed(digits);
  console.log(`\n## CDP relay (Runtime.evaluate 1+1; ${SEQ} sequential, ${PIPE} with ${WINDOW} in flight; best of ${ROUNDS} rounds)\n`);
  console.log("| path | p50 round trip (ms) | p99 (ms) | messages/s in flight |\n|---|---|---|---|");
  console.log(`| direct to emulator wsEndpoint (baseline) | ${f(d.p50, 3)} | ${f(d.p99, 3)} | ${f(d.perSecond)} |`);
  console.log(`| through Tollgate (/devtools/browser/<id>?token=) | ${f(g.p50, 3)} | ${f(g.p99, 3)} | ${f(g.perSecond)} |`);
  console.log(`| ratio gateway / direct | ${f(g.p50 / d.p50, 2)}× | ${f(g.p99 / d.p99, 2)}× | ${f(g.perSecond / d.perSecond, 2)}× |`);
  console.log(`| through Tollgate with the CDP guard (domains policy) | ${f(q.p50, 3)} | ${f(q.p99, 3)} | ${f(q.perSecond)} |`);
  console.log(`| ratio guarded / plain relay | ${f(q.p50 / g.p50, 2)}× | ${f(q.p99 / g.p99, 2)}× | ${f(q.perSecond / g.perSecond, 2)}× |`);
  await hb.sessions.stop(session.id);
  await guardedHb.sessions.stop(guardedSession.id);
} finally {
  await gw.stop();
  await emulator.close();
}
