// The fuzzer: 10,000 seeded requests (bodies, headers, paths, Hosts, methods, encodings, raw-socket framing attacks)
// against a gateway process in front of the emulator. Every request answered (only framing attacks and malformed or
// cut-off raw requests may be refused by closing the connection), never a 500, every 5xx a JSON 502/503/504, no crash,
// no smuggled request upstream, RSS growth within 64 MiB. FUZZ_REQUESTS and FUZZ_SEED change the run (`npm run soak`
// runs longer).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fuzzCases, type HttpCase } from "./fuzz-cases.js";
import { runFuzz, type FuzzReport } from "./fuzz-run.js";
import { Prng } from "./prng.js";
import { rssMiB, sampleRss } from "./process-memory.js";
import { startReliabilityStack, type ReliabilityStack } from "./stack.js";

const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const WARMUP = 1000;
const RSS_GROWTH_LIMIT_MIB = 64;

describe(`the fuzzer (${REQUESTS} requests, seed ${SEED})`, () => {
  let s: ReliabilityStack;
  let report: FuzzReport;
  let rss: { start: number; warm: number; end: number; peak: number };

  beforeAll(async () => {
    // The upstream gets 10 s (the clients wait 20): an upstream that stalls is the gateway's JSON 504, not a hang.
    s = await startReliabilityStack({ sessions: false, timeoutMs: 10_000 });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
  });

  it(
    "answers every request it should (none unanswered or timed out), never a 500, every 5xx as JSON 502/503/504, and keeps its memory",
    async () => {
      const target = { host: new URL(s.gw.url).host, keys: s.keys, tokens: s.tokens, sandboxId: s.sandboxId, sessionId: s.sessionId };
      const opts = { url: s.gw.url, concurrency: 16, timeoutMs: 20_000, secrets: s.secrets };
      const start = rssMiB(s.gw.pid);
      // A warm-up with another seed: the code paths are compiled and the pools filled before the baseline is taken.
      const warmup = await runFuzz(opts, fuzzCases(new Prng(SEED ^ 0x5eed), target, WARMUP));
      const warm = rssMiB(s.gw.pid);
      const sampler = sampleRss(s.gw.pid, 100);
      const probe = async (name: string, url: string, headers: Record<string, string> = {}) => {
        const t = Date.now();
        try {
          const r = await fetch(url, { headers, signal: AbortSignal.timeout(60_000) });
          await r.text();
          console.log(`[fuzz] probe during a stall: ${name} → ${r.status} in ${Date.now() - t} ms`);
        } catch (e) {
          console.log(`[fuzz] probe during a stall: ${name} → ${String(e)} after ${Date.now() - t} ms`);
        }
      };
      // On the first request not answered in time: what still answers, and does the same request answer on a new connection?
      const onFirstTimeout = (c: HttpCase) => {
        const who =
          Object.entries(s.keys).find(([, k]) => c.headers["x-api-key"] === k || c.headers.authorization === `Bearer ${k}`)?.[0] ?? "other";
        console.log(`[fuzz] first case not answered in time: ${c.method} ${c.path} as ${who}, headers ${Object.keys(c.headers).join(",")}`);
        const t = Date.now();
        void import("node:http").then(({ request }) => {
          const u = new URL(s.gw.url);
          const req = request(
            { host: u.hostname, port: u.port, method: c.method, path: c.path, headers: c.headers, setHost: false },
            (res) => {
              res.resume();
              res.on("end", () =>
                console.log(`[fuzz] the same case again on a new connection → ${res.statusCode} in ${Date.now() - t} ms`),
              );
            },
          );
          req.on("error", (e) => console.log(`[fuzz] the same case again → ${e.message}`));
          req.setTimeout(30_000, () => (console.log("[fuzz] the same case again: no answer in 30 s"), req.destroy()));
          req.end(c.body);
        });
        void probe("health", `${s.gw.url}/_tollgate/health`);
        void probe("whoami (key)", `${s.gw.url}/_tollgate/whoami`, { "x-api-key": s.keys.acme });
        void probe("usage (key)", `${s.gw.url}/_tollgate/usage`, { "x-api-key": s.keys.acme });
        void probe("images via gateway (key)", `${s.gw.url}/api/images`, { "x-api-key": s.keys.acme });
        void probe("images via the proxy", `${s.proxy.url}/api/images`, { "x-api-key": s.emu.apiKey });
        void probe("images at the emulator", `${s.emu.controlUrl}/api/images`, { "x-api-key": s.emu.apiKey });
      };
      report = await runFuzz({ ...opts, onFirstTimeout }, fuzzCases(new Prng(SEED), target, REQUESTS));
      const peak = sampler.stop();
      rss = { start, warm, end: rssMiB(s.gw.pid), peak };

      const histogram = Object.entries(report.statuses)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k}:${v}`)
        .join(" ");
      console.log(
        `[fuzz] ${report.requests} requests (${report.raw} raw-socket) in ${(report.durationMs / 1000).toFixed(1)} s ` +
          `(${Math.round(report.requests / (report.durationMs / 1000))}/s), seed ${SEED}, client loop stalled ${report.clientStallMs} ms\n[fuzz] statuses ${histogram}\n` +
          `[fuzz] RSS start ${start.toFixed(0)} MiB, after warm-up ${warm.toFixed(0)}, end ${rss.end.toFixed(0)}, peak ${peak.toFixed(0)} (growth ${(rss.end - warm).toFixed(0)} MiB)` +
          (report.failures.length ? `\n[fuzz] failures:\n  ${report.failures.join("\n  ")}` : "") +
          (process.env.FUZZ_VERBOSE ? `\n[fuzz] raw cases refused by closing (sample):\n  ${report.closed.join("\n  ")}` : "") +
          (report.failures.length
            ? `\n[fuzz] gateway log (last lines):\n${s.gw.output().split("\n").slice(-15).join("\n").slice(0, 6000)}`
            : ""),
      );
      expect(warmup.failures).toEqual([]);
      expect(report.failures).toEqual([]);
      expect(report.statuses.unanswered ?? 0).toBe(0);
      expect(report.statuses.timeout ?? 0).toBe(0);
      expect(report.requests).toBe(REQUESTS);
      expect(rss.end - rss.warm).toBeLessThanOrEqual(RSS_GROWTH_LIMIT_MIB);
    },
    Math.max(240_000, REQUESTS * 10),
  );

  it("is still the same process, healthy, and logged nothing unhandled", async () => {
    expect((await fetch(`${s.gw.url}/_tollgate/health`)).status).toBe(200);
    expect(s.gw.output()).not.toMatch(/"unhandled"|internal_error|FATAL|heap out of memory/);
  });

  it("let no request smuggled in an ambiguous framing reach the upstream", () => {
    const upstream = s.proxy.forwarded().join("\n");
    expect(report.smuggleMarkers.length).toBeGreaterThan(0);
    for (const m of report.smuggleMarkers) expect(upstream).not.toContain(m);
  });
});
