// Credit-billed jobs sold with x402 `upto` (Permit2): a buyer holding only a funded wallet (@x402/fetch v2 with the upto
// client scheme, after its one Permit2 approval) signs the job's reservation × the markup as a maximum; the start
// settles nothing; when the job ends the gateway settles the credits it used × the markup, once, and nothing when the
// job failed. The emulator runs the jobs for real (Chromium on its local web); the chain judges.
import { randomBytes } from "node:crypto";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import type { PaymentRequired } from "@x402/core/types";
import type { EmulatorHandle } from "../../emulator/index.js";
import { startEmulator } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";
import { json, startSellingGateway, type SellingStack, uptoBuyer } from "./stack.js";

const FUNDS = 1_000_000n;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const tenantOf = (address: string) => `wallet-${address.toLowerCase().slice(2)}`;
// The credit table's defaults: a crawled page 0.001, a scrape 0.001; with a 100 % markup a buyer pays twice that.
const PRICES = { jobs: { markupPercent: 100, floor: "0.0005" } };
/** One page only: the start page, no links followed, no sitemap. */
const ONE_PAGE_CRAWL = { url: "http://web.emulator.test/about", maxPages: 5, followLinks: false, ignoreSitemap: true };

/** Reads `path` with `token` until the job's status is terminal; every receipt an answer carried, in order. */
async function readUntilEnd(base: string, path: string, token: string) {
  const receipts: string[] = [];
  for (let i = 0; i < 120; i++) {
    const r = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(200);
    const receipt = r.headers.get("payment-response");
    if (receipt) receipts.push(receipt);
    const body = (await r.json()) as { status: string };
    if (["completed", "failed", "stopped"].includes(body.status)) return { status: body.status, receipts };
    await sleep(500);
  }
  throw new Error(`${path} did not end`);
}

/** Waits until `check` holds (the sale settles a moment after the job's end is seen). */
async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 30_000): Promise<T> {
  const until = Date.now() + ms;
  let v = await read();
  while (!ok(v) && Date.now() < until) {
    await sleep(200);
    v = await read();
  }
  return v;
}

describe("jobs sold by the credits they use (upto)", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  beforeAll(async () => {
    emu = await startEmulator({ modules: ["x402", "jobs"] });
    s = await startSellingGateway(emu, { prices: PRICES, sales: { mcp: true } });
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("offers upto only, its maximum the request's reservation × the markup", async () => {
    const r = await fetch(`${s.gateway.url}/api/crawl`, json({ url: "http://web.emulator.test/", maxPages: 5 }));
    expect(r.status).toBe(402);
    const offer = decodePaymentRequiredHeader(r.headers.get("payment-required")!);
    expect(offer.accepts.map((a) => a.scheme)).toEqual(["upto"]);
    // 5 pages × 0.001 × 2 = 0.010
    expect(offer.accepts[0]!.amount).toBe("10000");
    expect(offer.accepts[0]!.extra).toMatchObject({ assetTransferMethod: "permit2" });
    // The row's default (10 pages) when the request names none; a scrape is one call.
    const byDefault = await fetch(`${s.gateway.url}/api/crawl`, json({ url: "http://web.emulator.test/" }));
    expect(decodePaymentRequiredHeader(byDefault.headers.get("payment-required")!).accepts[0]!.amount).toBe("20000");
    const scrape = await fetch(`${s.gateway.url}/api/scrape`, json({ url: "http://web.emulator.test/" }));
    expect(decodePaymentRequiredHeader(scrape.headers.get("payment-required")!).accepts[0]!.amount).toBe("2000");
    // Listed for discovery with the row's defaults.
    const listed = await (await fetch(`${s.gateway.url}/.well-known/x402`)).json();
    const item = listed.items.find((i: { resource: string }) => i.resource === `${s.gateway.url}/api/crawl`);
    expect(item.metadata.class).toBe("jobs");
    expect(item.accepts[0].amount).toBe("20000");
  });

  it("a crawl bought, followed to its end: settled for the page it crawled × the markup; chain == book, margin as priced", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu, FUNDS);
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    const r = await buyer.pay(`${s.gateway.url}/api/crawl`, json(ONE_PAGE_CRAWL));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-sale")).toBe("metered");
    expect(r.headers.get("x-tollgate-sale-max")).toBe("10000");
    const { jobId } = (await r.json()) as { jobId: string };
    // Nothing moved at the start: the maximum is only signed.
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
    // While it runs, the wallet tenant's budget holds the job's reservation: 5 pages × 0.001.
    const tenant = tenantOf(buyer.address);
    const held = await s.gateway.gateway.services.stores.ledger.list({ tenant, resource: `job:${jobId}` });
    expect(held).toMatchObject([{ state: "reserved", amount: "5000" }]);
    const token = r.headers.get("x-tollgate-wallet-token")!;
    const end = await readUntilEnd(s.gateway.url, `/api/crawl/${jobId}/status`, token);
    expect(end.status).toBe("completed");
    const book = await eventually(
      () => s.gateway.gateway.services.sales!.book.list(tenant),
      (b) => b.length > 0,
    );
    // One page × 0.001 × 2 = 0.002 of the 0.010 signed.
    expect(book).toMatchObject([{ amount: "2000", scheme: "upto", class: "jobs", row: "crawl.start", job: jobId }]);
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(2000n);
    expect((await chain.balanceOf(s.wallet.address)) - gatewayBefore).toBe(2000n);
    // A receipt came back on a read (the buyer's or the gateway's own follow-up): it names the same transaction.
    for (const h of end.receipts) expect(decodePaymentResponseHeader(h).transaction).toBe(book[0]!.transaction);
    // Outbound: the job's credits as the meter settled them (one page, 0.001); the margin is the markup.
    const entries = await s.gateway.gateway.services.stores.ledger.list({ tenant, resource: `job:${jobId}` });
    expect(entries).toMatchObject([{ state: "committed", amount: "1000", settledFrom: "upstream" }]);
    const report = await (
      await fetch(`${s.gateway.url}/_tollgate/admin/sales?tenant=${tenant}&check=chain`, { headers: { "x-api-key": s.adminKey } })
    ).json();
    expect(report.sales).toHaveLength(1);
    expect(report.sales[0]).toMatchObject({ chain: "matched", transaction: book[0]!.transaction });
    expect(report.buyers[0]).toMatchObject({ inbound: "0.002", outbound: "0.001", margin: "0.001" });
    // Read again: nothing more is settled.
    const again = await fetch(`${s.gateway.url}/api/crawl/${jobId}`, { headers: { authorization: `Bearer ${token}` } });
    expect(again.status).toBe(200);
    expect(again.headers.get("payment-response")).toBeNull();
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(2000n);
    // Another wallet's token: the job is not there for it.
    const other = await uptoBuyer(emu, FUNDS);
    const theirs = await other.pay(`${s.gateway.url}/api/scrape`, json({ url: "http://web.emulator.test/about" }));
    expect(theirs.status).toBe(200);
    const otherToken = theirs.headers.get("x-tollgate-wallet-token")!;
    for (const path of [`/api/crawl/${jobId}`, `/api/crawl/${jobId}/status`]) {
      const r404 = await fetch(`${s.gateway.url}${path}`, { headers: { authorization: `Bearer ${otherToken}` } });
      expect(r404.status).toBe(404);
    }
  }, 120_000);

  it("a scrape nobody reads is settled by the gateway's own follow-up: the call's credits × the markup", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu, FUNDS);
    const r = await buyer.pay(`${s.gateway.url}/api/scrape`, json({ url: "http://web.emulator.test/about" }));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-sale")).toBe("metered");
    expect(r.headers.get("x-tollgate-sale-max")).toBe("2000");
    const { jobId } = (await r.json()) as { jobId: string };
    const paid = await eventually(
      async () => FUNDS - (await chain.balanceOf(buyer.address)),
      (v) => v > 0n,
      60_000,
    );
    expect(paid).toBe(2000n);
    const tenant = tenantOf(buyer.address);
    const book = await eventually(
      () => s.gateway.gateway.services.sales!.book.list(tenant),
      (b) => b.length > 0,
    );
    expect(book).toMatchObject([{ amount: "2000", row: "scrape.start", job: jobId }]);
    expect(await s.gateway.gateway.services.sales!.jobs!.pending(jobId)).toBeUndefined();
  }, 90_000);

  it("a job the upstream fails settles nothing: no transfer, no book line", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu, FUNDS);
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    const r = await buyer.pay(`${s.gateway.url}/api/scrape`, json({ url: "http://web.emulator.test/no-such-page" }));
    expect(r.status).toBe(200);
    const { jobId } = (await r.json()) as { jobId: string };
    const end = await readUntilEnd(s.gateway.url, `/api/scrape/${jobId}/status`, r.headers.get("x-tollgate-wallet-token")!);
    expect(end.status).toBe("failed");
    const jobs = s.gateway.gateway.services.sales!.jobs!;
    expect(
      await eventually(
        () => jobs.pending(jobId),
        (p) => p === undefined,
      ),
    ).toBeUndefined();
    for (const h of end.receipts) expect(decodePaymentResponseHeader(h)).toMatchObject({ success: true, amount: "0", transaction: "" });
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
    expect(await chain.balanceOf(s.wallet.address)).toBe(gatewayBefore);
    expect(await s.gateway.gateway.services.sales!.book.list(tenantOf(buyer.address))).toHaveLength(0);
  }, 90_000);

  it("a job still running when its window is over is settled then, for what its credits hold, before the authorization lapses", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu, FUNDS);
    // A page that answers after 20 s: the crawl is still running when the sweep is run as if the window were over.
    const slow = { url: "http://web.emulator.test/slow?ms=20000", maxPages: 2, followLinks: false, ignoreSitemap: true };
    const r = await buyer.pay(`${s.gateway.url}/api/crawl`, json(slow));
    expect(r.status).toBe(200);
    expect(r.headers.get("x-tollgate-sale-max")).toBe("4000");
    const { jobId } = (await r.json()) as { jobId: string };
    const jobs = s.gateway.gateway.services.sales!.jobs!;
    expect(await jobs.settleDue()).toBe(0);
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
    // An hour and a bit later (the window is 60 minutes): the hold (2 pages × 0.001) × 2, the signed maximum.
    expect(await jobs.settleDue(Date.now() + 61 * 60_000)).toBe(1);
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(4000n);
    expect(await jobs.pending(jobId)).toBeUndefined();
    expect(await s.gateway.gateway.services.sales!.book.list(tenantOf(buyer.address))).toMatchObject([{ amount: "4000", job: jobId }]);
  }, 90_000);

  it("over MCP: the crawl tool asks for an upto payment, is paid through _meta, and carries the receipt when the job ended", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu, FUNDS);
    const mcp = new Client({ name: "buyer", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${s.gateway.url}/mcp`)));
    try {
      const tools = (await mcp.listTools()).tools.map((t) => t.name);
      expect(tools).toEqual(expect.arrayContaining(["scrape", "crawl", "extract", "agent_task"]));
      const args = { url: ONE_PAGE_CRAWL.url, maxPages: 5, followLinks: false };
      const first = (await mcp.callTool({ name: "crawl", arguments: args })) as CallToolResult;
      expect(first.isError).toBe(true);
      const required = first.structuredContent as unknown as PaymentRequired;
      // The same maximum as over HTTP: 5 pages × 0.001 × 2.
      expect(required.accepts).toMatchObject([{ scheme: "upto", amount: "10000" }]);
      expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
      const payment = await buyer.client.createPaymentPayload(required);
      const paid = (await mcp.callTool({ name: "crawl", arguments: args, _meta: { "x402/payment": payment } })) as CallToolResult;
      expect(paid.isError).toBeFalsy();
      const job = JSON.parse((paid.content[0] as { text: string }).text) as { jobId: string; status: string };
      expect(job.status).toBe("completed");
      expect(paid._meta?.["tollgate/sale"]).toBe("charged");
      const receipt = paid._meta?.["x402/payment-response"] as { amount: string; transaction: string };
      // The sitemap is not ignored here: the crawl may visit more than its start page; charged what it crawled.
      const book = await s.gateway.gateway.services.sales!.book.list(tenantOf(buyer.address));
      expect(book).toMatchObject([{ job: job.jobId, amount: receipt.amount, transaction: receipt.transaction }]);
      const entries = await s.gateway.gateway.services.stores.ledger.list({
        tenant: tenantOf(buyer.address),
        resource: `job:${job.jobId}`,
      });
      expect(BigInt(receipt.amount)).toBe(2n * BigInt(entries[0]!.amount));
      expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(BigInt(receipt.amount));
    } finally {
      await mcp.close();
    }
  }, 120_000);

  it("a job start beyond the wallet tenant's budget is refused before anything is kept or settled", async () => {
    const buyer = await uptoBuyer(emu, FUNDS);
    // A first small purchase makes the tenant; then its budget is set below the next job's reservation.
    const first = await buyer.pay(`${s.gateway.url}/api/scrape`, json({ url: "http://web.emulator.test/about" }));
    expect(first.status).toBe(200);
    const tenant = tenantOf(buyer.address);
    const put = await fetch(`${s.gateway.url}/_tollgate/admin/tenants/${tenant}/budget`, {
      method: "PUT",
      headers: { "x-api-key": s.adminKey, "content-type": "application/json" },
      body: JSON.stringify({ daily: "0.003" }),
    });
    expect(put.status).toBeLessThan(300);
    const before = await emu.chain!.balanceOf(buyer.address);
    // 50 pages × 0.001 = 0.05 of upstream credits: more than the day's 0.003 allows.
    const r = await buyer.pay(`${s.gateway.url}/api/crawl`, json({ ...ONE_PAGE_CRAWL, maxPages: 50 }));
    expect(r.status).toBe(402);
    expect(r.headers.get("x-tollgate-sale")).toBe("not-charged");
    expect((await r.json()).code).toBe("budget_exceeded");
    await sleep(500);
    expect(await emu.chain!.balanceOf(buyer.address)).toBeLessThanOrEqual(before);
    const entries = await s.gateway.gateway.services.stores.ledger.list({ tenant, kind: "credits" });
    expect(entries.filter((e) => e.route === "crawl.start")).toHaveLength(0);
  }, 90_000);
});

describe("a job sold on one instance, on a shared Redis", () => {
  let emu: EmulatorHandle;
  let redis: RedisServer;
  let a: RunningGateway;
  let b: RunningGateway;
  let payee: `0x${string}`;
  beforeAll(async () => {
    [emu, redis] = await Promise.all([startEmulator({ modules: ["x402", "jobs"] }), startRedisServer()]);
    const chain = emu.chain!;
    const wallet = await chain.createFundedWallet(10_000_000n);
    payee = wallet.address;
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: { baseUrl: emu.controlUrl, timeoutMs: 30_000, allowedHosts: [new URL(emu.controlUrl).host] },
      state: { backend: "redis", redisUrl: `${redis.url}/5` },
      payments: { networks: [chain.network], assets: [chain.token.address], rpc: { [chain.network]: chain.rpcUrl } },
      tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(generateTenantKey()) }] }],
      sales: {
        facilitator: emu.facilitator!.url,
        accept: [{ network: chain.network, asset: chain.token.address, name: chain.token.name, version: chain.token.version }],
        prices: PRICES,
      },
    });
    const secrets = { upstreamApiKey: emu.apiKey, walletKey: wallet.privateKey, tokenSecret: randomBytes(32).toString("hex") };
    a = await startNodeGateway({ config, secrets, logSink: () => {} });
    b = await startNodeGateway({ config, secrets, logSink: () => {} });
  }, 180_000);
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await emu?.close();
    await redis?.stop();
  });

  it("both instances reading the ended job, and both sweeping, settle it once", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu, FUNDS);
    const before = await chain.balanceOf(payee);
    const r = await buyer.pay(`${a.url}/api/crawl`, json(ONE_PAGE_CRAWL));
    expect(r.status).toBe(200);
    const { jobId } = (await r.json()) as { jobId: string };
    const token = r.headers.get("x-tollgate-wallet-token")!;
    // Wait on the emulator until the job ended (nothing read through the gateways meanwhile but their follow-ups).
    const upstream = async () =>
      (
        (await (await fetch(`${emu.controlUrl}/api/crawl/${jobId}/status`, { headers: { "x-api-key": emu.apiKey } })).json()) as {
          status: string;
        }
      ).status;
    expect(await eventually(upstream, (st) => st === "completed", 60_000)).toBe("completed");
    // Both instances at once: reads of the job through each, and each one's sweep.
    const reads = await Promise.all(
      [a, b, a, b].map((g) => fetch(`${g.url}/api/crawl/${jobId}/status`, { headers: { authorization: `Bearer ${token}` } })),
    );
    await Promise.all([a.gateway.services.sales!.jobs!.settleDue(), b.gateway.services.sales!.jobs!.settleDue()]);
    expect(reads.every((x) => x.status === 200)).toBe(true);
    // At most one answer carries a receipt (the instance that won the claim; or none, when a follow-up got there first).
    expect(reads.filter((x) => x.headers.get("payment-response")).length).toBeLessThanOrEqual(1);
    const tenant = tenantOf(buyer.address);
    const book = await eventually(
      () => b.gateway.services.sales!.book.list(tenant),
      (l) => l.length > 0,
    );
    await sleep(1_000);
    expect(await a.gateway.services.sales!.book.list(tenant)).toHaveLength(1);
    expect(book).toMatchObject([{ amount: "2000", job: jobId }]);
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(2000n);
    expect((await chain.balanceOf(payee)) - before).toBe(2000n);
  }, 120_000);

  it("a job sold by an instance that went away is settled by the other's sweep", async () => {
    const chain = emu.chain!;
    const buyer = await uptoBuyer(emu, FUNDS);
    const r = await buyer.pay(`${a.url}/api/crawl`, json(ONE_PAGE_CRAWL));
    expect(r.status).toBe(200);
    const { jobId } = (await r.json()) as { jobId: string };
    await a.close();
    // Only b is left; its sweep (the reconciler's pass runs it) follows the job to its end and settles it.
    const paid = await eventually(
      async () => {
        await b.gateway.services.sales!.jobs!.settleDue();
        return FUNDS - (await chain.balanceOf(buyer.address));
      },
      (v) => v > 0n,
      60_000,
    );
    expect(paid).toBe(2000n);
    const book = await eventually(
      () => b.gateway.services.sales!.book.list(tenantOf(buyer.address)),
      (l) => l.length > 0,
    );
    expect(book).toMatchObject([{ amount: "2000", job: jobId }]);
  }, 120_000);
});
