// Access log lines, as an operator reads them: tenant, client address, user agent, upstream latency and bytes on every
// line; a 429 names the tenant it refused; secrets never appear.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Context } from "hono";
import type { EmulatorHandle } from "../../emulator/index.js";
import { search, startEmulatorWithChain, startPaidGateway } from "../helpers/paid-stack.js";
import { clientAddress } from "../../src/web/client-address.js";

type Line = Record<string, any>;
const requestLines = (logs: string[]): Line[] => logs.map((l) => JSON.parse(l)).filter((l) => l.msg === "request");
const UA = "operator-test/1.0 (+tollgate)";

describe("access log lines (emulator + local chain)", () => {
  let emu: EmulatorHandle;
  let s: Awaited<ReturnType<typeof startPaidGateway>>;
  beforeAll(async () => {
    emu = await startEmulatorWithChain();
    s = await startPaidGateway(emu, [
      { id: "acme", budget: { daily: "1.00" } },
      { id: "chatty", quotas: { requestsPerMinute: 2 } },
    ]);
  });
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("a paid search's line carries tenant, client address, user agent, upstream latency and bytes, and what was paid", async () => {
    const body = { query: "log line fields" };
    const r = await search(s.gateway.url, s.keys.acme, body, { "user-agent": UA, "x-request-id": "log-paid-1" });
    expect(r.status).toBe(200);
    await r.arrayBuffer();
    const line = requestLines(s.logs).find((l) => l.requestId === "log-paid-1")!;
    expect(line).toMatchObject({
      tenant: "acme",
      route: "x402.web.search",
      status: 200,
      client: "127.0.0.1",
      userAgent: UA,
      cache: "miss",
    });
    expect(BigInt(line.paid)).toBeGreaterThan(0n);
    expect(line.upstreamMs).toBeGreaterThan(0);
    expect(line.upstreamMs).toBeLessThanOrEqual(line.durationMs);
    // Two upstream calls (the 402, then the paid retry), each carrying the JSON body.
    expect(line.upstreamBytesOut).toBe(2 * JSON.stringify(body).length);
    expect(line.upstreamBytesIn).toBeGreaterThan(0);
  });

  it("ignores X-Forwarded-For from a client that is not a trusted proxy", async () => {
    const r = await search(
      s.gateway.url,
      s.keys.acme,
      { query: "log line fields" },
      { "x-forwarded-for": "203.0.113.9", "x-request-id": "log-xff-1" },
    );
    expect(r.status).toBe(200);
    const line = requestLines(s.logs).find((l) => l.requestId === "log-xff-1")!;
    expect(line.client).toBe("127.0.0.1");
    expect(line.cache).toBe("hit");
    expect(BigInt(line.saved)).toBeGreaterThan(0n);
  });

  it("a 429 line names the tenant it refused", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${s.gateway.url}/_tollgate/whoami`, {
        headers: { "x-api-key": s.keys.chatty, "x-request-id": `log-rl-${i}` },
      });
      statuses.push(r.status);
    }
    expect(statuses).toEqual([200, 200, 429]);
    const line = requestLines(s.logs).find((l) => l.requestId === "log-rl-2")!;
    expect(line).toMatchObject({ status: 429, tenant: "chatty", client: "127.0.0.1" });
  });

  it("never writes a tenant key, the wallet key or a payment signature", () => {
    const all = s.logs.join("\n");
    expect(all).not.toContain(s.keys.acme);
    expect(all).not.toContain(s.keys.chatty);
    expect(all).not.toContain(s.wallet.privateKey.slice(2));
    expect(all.toLowerCase()).not.toContain('payment-signature":"ey');
  });
});

describe("clientAddress (behind trusted proxies)", () => {
  const ctx = (xff?: string) => ({ req: { header: (n: string) => (n === "x-forwarded-for" ? xff : undefined) } }) as unknown as Context;
  const trusted = (a: string) => a === "10.0.0.5" || a === "10.0.0.6";

  it("is the socket peer when no proxy is trusted, whatever X-Forwarded-For says", () => {
    expect(clientAddress(() => "::ffff:192.0.2.1")(ctx("203.0.113.9"))).toBe("192.0.2.1");
  });

  it("reads X-Forwarded-For from the right, skipping trusted proxies, when the peer is one", () => {
    const of = clientAddress(() => "10.0.0.5", trusted);
    expect(of(ctx("198.51.100.7, 203.0.113.9, 10.0.0.6"))).toBe("203.0.113.9");
    expect(of(ctx(undefined))).toBe("10.0.0.5");
  });

  it("ignores X-Forwarded-For when the peer is not a trusted proxy", () => {
    expect(clientAddress(() => "192.0.2.1", trusted)(ctx("203.0.113.9"))).toBe("192.0.2.1");
  });
});
