// The mixed soak (`npm run soak -- --duration 300`): paid and cached searches, sandbox exec and files, a PTY and a CDP
// session, all at once through one gateway process for the whole duration. Counts every operation and every error,
// samples the gateway's RSS, and exits non-zero on any error or on memory that does not stay flat.
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer from "puppeteer-core";
import { rssMiB } from "./process-memory.js";
import { startReliabilityStack } from "./stack.js";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const DURATION_S = arg("duration", 300);
const FLAT_LIMIT_MIB = arg("flat-mib", 32);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const stack = await startReliabilityStack({ sessions: true, dailyBudget: "100.00" });
const { gw } = stack;
const counts: Record<string, { ok: number; errors: number; lastError?: string }> = {};
const deadline = Date.now() + DURATION_S * 1000;

/** Runs `op` again and again until the deadline, `pauseMs` apart, counting successes and errors. */
async function loop(name: string, pauseMs: number, op: (i: number) => Promise<void>) {
  const c: (typeof counts)[string] = (counts[name] = { ok: 0, errors: 0 });
  for (let i = 0; Date.now() < deadline; i++) {
    try {
      await op(i);
      c.ok++;
    } catch (e) {
      c.errors++;
      c.lastError = String((e as Error)?.message ?? e).slice(0, 300);
    }
    await sleep(pauseMs);
  }
}

async function search(query: string, expectCache?: string) {
  const r = await fetch(`${gw.url}/x402/web/search`, {
    method: "POST",
    headers: { "x-api-key": stack.keys.acme, "content-type": "application/json" },
    body: JSON.stringify({ query }),
  });
  const text = await r.text();
  if (r.status !== 200) throw new Error(`search ${r.status} ${text.slice(0, 200)}`);
  if (expectCache && r.headers.get("x-tollgate-cache") !== expectCache)
    throw new Error(`cache ${r.headers.get("x-tollgate-cache")}, wanted ${expectCache}`);
}

const rss: Array<{ t: number; mib: number }> = [];
const started = Date.now();
const sampler = setInterval(() => rss.push({ t: Math.round((Date.now() - started) / 1000), mib: rssMiB(gw.pid) }), 5000);
rss.push({ t: 0, mib: rssMiB(gw.pid) });

try {
  const sdk = new Hyperbrowser({ apiKey: stack.keys.acme, baseUrl: gw.url.replace("127.0.0.1", "localhost") });
  const sbx = await sdk.sandboxes.connect(stack.sandboxId!);
  const terminal = await sbx.terminal.create({ command: "bash", args: ["--norc", "--noprofile"], rows: 24, cols: 80 });
  const tty = await terminal.attach();
  let ttyOut = "";
  const ttyReader = (async () => {
    for await (const e of tty.events()) if (e.type === "output") ttyOut = (ttyOut + (e as { data: string }).data).slice(-4096);
  })();
  const wsEndpoint = `${gw.url.replace("http", "ws")}/devtools/browser/${stack.sessionId}?token=${encodeURIComponent(stack.tokens.session!)}`;
  const browser = await puppeteer.connect({ browserWSEndpoint: wsEndpoint, defaultViewport: null });
  const page = await browser.newPage();
  await search("soak cached query"); // the cached loop's answers are hits from here on

  await Promise.all([
    loop("paid search", 250, (i) => search(`soak paid ${i} ${Date.now()}`, "miss")),
    loop("cached search", 50, () => search("soak cached query", "hit")),
    loop("sandbox exec", 100, async (i) => {
      const r = await sbx.exec(`echo soak-${i}`);
      if (r.stdout.trim() !== `soak-${i}`) throw new Error(`exec said ${JSON.stringify(r.stdout)}`);
    }),
    loop("sandbox files", 100, async (i) => {
      const path = `/home/ubuntu/soak-${i % 10}.txt`;
      await sbx.files.writeText(path, `soak ${i}`);
      const back = await sbx.files.readText(path);
      if (back !== `soak ${i}`) throw new Error(`read back ${JSON.stringify(back)}`);
    }),
    loop("pty round trip", 500, async (i) => {
      await tty.write(`echo pty-$((${i}+1000))\r`);
      for (let k = 0; k < 100 && !ttyOut.includes(`pty-${i + 1000}\r\n`); k++) await sleep(20);
      if (!ttyOut.includes(`pty-${i + 1000}\r\n`)) throw new Error(`no pty-${i + 1000} in the terminal`);
    }),
    loop("cdp page", 500, async (i) => {
      await page.setContent(`<title>soak ${i}</title>`);
      if ((await page.title()) !== `soak ${i}`) throw new Error("wrong title");
    }),
  ]);
  await tty.close();
  await ttyReader.catch(() => {});
  await terminal.kill().catch(() => {});
  await browser.disconnect();
} finally {
  clearInterval(sampler);
  rss.push({ t: Math.round((Date.now() - started) / 1000), mib: rssMiB(gw.pid) });
  await stack.close();
}

// Flat: the mean of the last fifth of the run against the mean of the second fifth (the first is warm-up).
const fifth = (k: number) => {
  const lo = (DURATION_S * k) / 5,
    hi = (DURATION_S * (k + 1)) / 5;
  const xs = rss.filter((s) => s.t >= lo && s.t <= hi).map((s) => s.mib);
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
};
const growth = fifth(4) - fifth(1);
const total = Object.values(counts).reduce((a, c) => a + c.ok + c.errors, 0);
const errors = Object.values(counts).reduce((a, c) => a + c.errors, 0);
console.log(`[soak] ${DURATION_S} s, ${total} operations, ${errors} errors`);
for (const [name, c] of Object.entries(counts))
  console.log(`  ${name.padEnd(16)} ${String(c.ok).padStart(6)} ok ${c.errors} errors${c.lastError ? ` (last: ${c.lastError})` : ""}`);
console.log(
  `[soak] RSS start ${rss[0]!.mib.toFixed(0)} MiB, peak ${Math.max(...rss.map((s) => s.mib)).toFixed(0)}, end ${rss.at(-1)!.mib.toFixed(0)}; ` +
    `mean of the last fifth − mean of the second fifth: ${growth.toFixed(1)} MiB (limit ${FLAT_LIMIT_MIB})`,
);
process.exit(errors === 0 && growth <= FLAT_LIMIT_MIB ? 0 : 1);
