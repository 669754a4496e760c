// Paid path latency through Tollgate vs a bare @x402/fetch client paying the emulator directly (same run, same chain),
// and cache-hit throughput vs the gateway's own health endpoint and the emulator's free search.
import autocannon from "autocannon";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { startEmulatorWithChain, startPaidGateway, search } from "../test/helpers/paid-stack.js";

const N = Number(process.env.BENCH_PAID_N ?? 40);

function pct(xs: number[], p: number) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

async function timeSeq(n: number, fn: (i: number) => Promise<Response>) {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = await fn(i);
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error(`status ${r.status}`);
    out.push(performance.now() - t);
  }
  return out;
}

async function cannon(url: string, opts: Record<string, unknown>) {
  const r = await autocannon({ url, connections: 20, duration: 5, ...opts });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx };
}

const emu = await startEmulatorWithChain();
const s = await startPaidGateway(emu, [{ id: "bench", budget: { daily: "100.00" } }], { walletFunds: 1_000_000_000n });
try {
  const chain = emu.chain!;
  const own = await chain.createFundedWallet(1_000_000_000n);
  const client = new x402Client().setSpendControls({
    allowedAssets: [{ network: chain.network, asset: chain.token.address, maxAmountPerPayment: "100000" }],
  });
  registerExactEvmScheme(client, { signer: privateKeyToAccount(own.privateKey) });
  const pay = wrapFetchWithPayment(fetch, client);

  // Warm both paths.
  await pay(`${emu.controlUrl}/x402/web/search`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: '{"query":"warm"}',
  }).then((r) => r.arrayBuffer());
  await search(s.gateway.url, s.keys.bench, { query: "warm" }).then((r) => r.arrayBuffer());

  const direct = await timeSeq(N, (i) =>
    pay(`${emu.controlUrl}/x402/web/search`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: `direct ${i}` }),
    }),
  );
  const viaGateway = await timeSeq(N, (i) => search(s.gateway.url, s.keys.bench, { query: `gateway ${i}` }));

  const body = JSON.stringify({ query: "hot cached query" });
  await search(s.gateway.url, s.keys.bench, { query: "hot cached query" }).then((r) => r.arrayBuffer());
  const hits = await cannon(`${s.gateway.url}/x402/web/search`, {
    method: "POST",
    body,
    headers: { "x-api-key": s.keys.bench, "content-type": "application/json" },
  });
  const health = await cannon(`${s.gateway.url}/_tollgate/health`, {});
  const freeDirect = await cannon(`${emu.controlUrl}/api/web/search`, {
    method: "POST",
    body,
    headers: { "x-api-key": emu.apiKey, "content-type": "application/json" },
  });

  const row = (name: string, xs: number[]) =>
    `| ${name} | ${pct(xs, 50).toFixed(1)} | ${pct(xs, 99).toFixed(1)} | ${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(1)} |`;
  console.log(`\n## Paid search latency (${N} sequential paid calls each, ms)\n`);
  console.log("| path | p50 | p99 | mean |\n|---|---|---|---|");
  console.log(row("bare @x402/fetch → emulator (baseline)", direct));
  console.log(row("client → Tollgate (pays) → emulator", viaGateway));
  console.log(`\nratio gateway/direct p50: ${(pct(viaGateway, 50) / pct(direct, 50)).toFixed(2)}`);
  console.log(`\n## Cache hits (autocannon, 20 connections, 5 s)\n`);
  console.log("| path | req/s | p50 ms | p99 ms | non-2xx |\n|---|---|---|---|---|");
  console.log(`| Tollgate cache hit (/x402/web/search) | ${hits.rps.toFixed(0)} | ${hits.p50} | ${hits.p99} | ${hits.non2xx} |`);
  console.log(`| Tollgate /_tollgate/health (baseline) | ${health.rps.toFixed(0)} | ${health.p50} | ${health.p99} | ${health.non2xx} |`);
  console.log(
    `| emulator free search, direct (baseline) | ${freeDirect.rps.toFixed(0)} | ${freeDirect.p50} | ${freeDirect.p99} | ${freeDirect.non2xx} |`,
  );
  console.log(
    `\ncache hit / health: ${(hits.rps / health.rps).toFixed(2)}; cache hit / direct free search: ${(hits.rps / freeDirect.rps).toFixed(2)}`,
  );
} finally {
  await s.close();
  await emu.close();
}
