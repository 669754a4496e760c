// Faults under load: paid searches keep coming while the upstream resets mid-stream, answers past the timeout, answers
// 5xx, drops connections, the facilitator is unreachable, Redis is killed and restarted, and the chain stops. Every
// request is answered (never a 500; every 5xx a JSON 502/503/504), every authorization the gateway signed is in its
// ledger, and once the holds expire the ledger reconciles with the chain to the last atomic unit.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startChain, type LocalChainHandle } from "../../emulator/chain/index.js";
import { startDurableRedis, type DurableRedis } from "./durable-redis.js";
import { FuzzChecker } from "./fuzz-run.js";
import { startReliabilityStack, type ReliabilityStack } from "./stack.js";

const PHASE_MS = Number(process.env.FAULT_PHASE_MS ?? 3000);
const UPSTREAM_TIMEOUT_MS = 2000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface LedgerEntry {
  id: string;
  state: string;
  amount: string;
  nonce?: string;
  payer?: string;
  kind?: string;
}

describe("faults under paid load", () => {
  let chain: LocalChainHandle;
  let redis: DurableRedis;
  let s: ReliabilityStack;

  beforeAll(async () => {
    [chain, redis] = await Promise.all([startChain(), startDurableRedis()]);
    s = await startReliabilityStack({
      sandbox: false,
      chain,
      state: { backend: "redis", redisUrl: redis.url },
      timeoutMs: UPSTREAM_TIMEOUT_MS,
      payments: { maxAuthorizationSeconds: 10, reconcileIntervalSeconds: 1 },
      dailyBudget: "20.00",
    });
  }, 120_000);
  afterAll(async () => {
    try {
      process.kill(chain?.pid, "SIGCONT");
    } catch {
      /* not stopped */
    }
    await s?.close();
    await chain?.close();
    await redis?.stop();
  });

  /** Every ledger entry of the tenant, read state by state (the listing caps at 1,000 a call; a quiet run signs more). */
  let largestListing = 0;
  const ledger = async (): Promise<LedgerEntry[]> => {
    const all: LedgerEntry[] = [];
    for (const state of ["reserved", "uncertain", "committed", "released"]) {
      const r = await fetch(`${s.gw.url}/_tollgate/admin/ledger?tenant=acme&state=${state}&limit=1000`, {
        headers: { "x-api-key": s.keys.ops },
      });
      if (!r.ok) throw new Error(`ledger: ${r.status} ${await r.text()}`);
      const entries = (await r.json()).entries as LedgerEntry[];
      largestListing = Math.max(largestListing, entries.length);
      all.push(...entries);
    }
    return all;
  };

  it("answers every request, loses no authorization, and reconciles with the chain afterwards", async () => {
    const checker = new FuzzChecker(s.secrets);
    const perPhase: Record<string, Record<string, number>> = {};
    let phase = "normal";
    let stop = false;
    let n = 0;
    let hung = 0;
    const client = async (w: number) => {
      while (!stop) {
        const i = n++;
        // One in five repeats an earlier query (a cache hit or a coalesced call); the rest pay.
        const query = i % 5 === 4 ? `fault query ${w}` : `fault query ${w}-${i}`;
        const ph = phase;
        const tally = (perPhase[ph] ??= {});
        try {
          const r = await fetch(`${s.gw.url}/x402/web/search`, {
            method: "POST",
            headers: { "x-api-key": s.keys.acme, "content-type": "application/json" },
            body: JSON.stringify({ query }),
            signal: AbortSignal.timeout(20_000),
          });
          const text = await r.text();
          const code = r.ok
            ? ""
            : (() => {
                try {
                  return `/${JSON.parse(text).code}`;
                } catch {
                  return "";
                }
              })();
          tally[`${r.status}${code}`] = (tally[`${r.status}${code}`] ?? 0) + 1;
          checker.check(
            { kind: "http", method: "POST", path: `/x402/web/search [${ph}]`, headers: {} },
            "POST",
            r.status,
            r.headers.get("content-type") ?? "",
            text,
          );
        } catch {
          hung++;
          tally.unanswered = (tally.unanswered ?? 0) + 1;
          await sleep(100);
        }
      }
    };
    const before = await chain.balanceOf(s.wallet.address);
    const load = Promise.all([0, 1, 2].map(client));
    const during = async (name: string, run: () => Promise<unknown>) => {
      phase = name;
      await run();
    };

    await during("normal", () => sleep(PHASE_MS));
    await during("upstream resets mid-stream", async () => {
      s.proxy.set({ kind: "reset-mid-stream" }, { paid: true });
      await sleep(PHASE_MS);
    });
    await during("upstream slower than the timeout", async () => {
      s.proxy.set({ kind: "slow", ms: UPSTREAM_TIMEOUT_MS + 1500 }, { paid: true });
      await sleep(PHASE_MS);
    });
    await during("upstream answers 503", async () => {
      s.proxy.set({ kind: "status", status: 503 }, { path: /^\/x402\// });
      await sleep(PHASE_MS);
    });
    await during("upstream connections reset", async () => {
      s.proxy.set({ kind: "reset" });
      await sleep(PHASE_MS);
    });
    await during("facilitator unreachable (paid calls answer 502)", async () => {
      s.proxy.set({ kind: "status", status: 502 }, { paid: true });
      await sleep(PHASE_MS);
    });
    s.proxy.set({ kind: "none" });
    await during("Redis killed and restarted", async () => {
      await sleep(300);
      await redis.crash();
      await sleep(PHASE_MS / 2);
      await redis.restart();
      await sleep(PHASE_MS / 2);
    });
    await during("chain stopped", async () => {
      process.kill(chain.pid, "SIGSTOP");
      await sleep(PHASE_MS);
      process.kill(chain.pid, "SIGCONT");
    });
    await during("normal again", () => sleep(PHASE_MS));
    stop = true;
    await load;

    // Every hold ends once its authorization has expired (10 s) plus the reconciler's grace (5 s).
    let entries = await ledger();
    const until = Date.now() + 45_000;
    while (entries.some((e) => e.state === "reserved" || e.state === "uncertain")) {
      if (Date.now() > until)
        throw new Error(
          `holds never settled: ${JSON.stringify(entries.filter((e) => e.state === "reserved" || e.state === "uncertain").slice(0, 3))}`,
        );
      await sleep(1000);
      entries = await ledger();
    }
    const spent = before - (await chain.balanceOf(s.wallet.address));
    const committed = entries.filter((e) => e.state === "committed");
    const committedSum = committed.reduce((sum, e) => sum + BigInt(e.amount), 0n);
    const signed = s.proxy.nonces();
    const inLedger = new Set(entries.map((e) => e.nonce?.toLowerCase()).filter(Boolean));
    let onChainMismatch = 0;
    for (const e of entries.filter((x) => x.nonce && x.payer)) {
      const used = await chain.authorizationState(e.payer as `0x${string}`, e.nonce as `0x${string}`);
      if (used !== (e.state === "committed")) onChainMismatch++;
    }

    const lines = Object.entries(perPhase).map(
      ([p, t]) =>
        `  ${p.padEnd(48)} ${Object.entries(t)
          .map(([k, v]) => `${k}:${v}`)
          .join(" ")}`,
    );
    console.log(
      `[faults] ${n} paid-search requests over ${Object.keys(perPhase).length} phases of ${PHASE_MS} ms\n${lines.join("\n")}\n` +
        `[faults] ${signed.size} authorizations signed, ${entries.length} ledger entries (${committed.length} committed, ` +
        `${entries.filter((e) => e.state === "released").length} released), on-chain spend ${spent}, committed ${committedSum}, ` +
        `on-chain mismatches ${onChainMismatch}` +
        (checker.failures.length ? `\n[faults] failures:\n  ${checker.failures.slice(0, 5).join("\n  ")}` : "") +
        `\n${s.gw
          .output()
          .split("\n")
          .filter((l) => l.includes('"unhandled"'))
          .slice(0, 3)
          .join("\n")}`,
    );
    expect(largestListing).toBeLessThan(1000); // no listing was cut at its cap: every entry was seen
    expect(hung).toBe(0);
    expect(checker.failures).toEqual([]);
    expect(signed.size).toBeGreaterThan(20);
    expect([...signed].filter((x) => !inLedger.has(x))).toEqual([]);
    expect(onChainMismatch).toBe(0);
    expect(committedSum).toBe(spent);
    // The gateway recovered: the last phase paid again.
    expect(perPhase["normal again"]?.["200"] ?? 0).toBeGreaterThan(0);
    expect(s.gw.output()).not.toMatch(/"unhandled"|internal_error|FATAL/);
  }, 150_000);
});
