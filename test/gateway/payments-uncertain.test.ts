import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { search, startEmulatorWithChain, startPaidGateway } from "../helpers/paid-stack.js";
import { startStallingProxy } from "../helpers/stalling-proxy.js";

const ledgerOf = async (url: string, key: string) =>
  (await (await fetch(`${url}/_tollgate/ledger`, { headers: { "x-api-key": key } })).json()).entries;

describe("payments whose outcome is unknown", () => {
  let emu: EmulatorHandle;
  beforeAll(async () => {
    emu = await startEmulatorWithChain();
  });
  afterAll(async () => {
    await emu?.close();
  });

  it("holds the amount as uncertain when the upstream goes silent after the signature, then commits it from the chain", async () => {
    const proxy = await startStallingProxy(emu.controlUrl, "forward-then-stall");
    // Authorizations live 12 s here so the test can watch the hold end.
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "0.005" } }], {
      upstreamUrl: proxy.url,
      timeoutMs: 1500,
      payments: { maxAuthorizationSeconds: 12 },
    });
    try {
      const before = await emu.chain!.balanceOf(s.wallet.address);
      const r = await search(s.gateway.url, s.keys.acme, { query: "lost answer" });
      expect(r.status).toBe(504);
      const body = await r.json();
      expect(body.code).toBe("payment_outcome_unknown");
      expect(body.held).toBe("0.005");
      expect(proxy.paidSeen()).toBe(1);
      // The upstream did settle: the money moved, but the gateway could not know.
      await new Promise((res) => setTimeout(res, 300));
      expect(before - (await emu.chain!.balanceOf(s.wallet.address))).toBe(5000n);

      let [entry] = await ledgerOf(s.gateway.url, s.keys.acme);
      expect(entry.state).toBe("uncertain");
      // Held, not released: the budget still counts it, so the next paid call is refused.
      const next = await search(s.gateway.url, s.keys.acme, { query: "another query" });
      expect(next.status).toBe(402);
      expect((await next.json()).code).toBe("budget_exceeded");
      // Reconciling before validBefore changes nothing.
      await s.gateway.gateway.reconciler.runOnce();
      [entry] = await ledgerOf(s.gateway.url, s.keys.acme);
      expect(entry.state).toBe("uncertain");
      // After validBefore (+ grace) the chain decides: the authorization was used, so it is committed.
      const wait = Date.parse(entry.validBefore) + 5_500 - Date.now();
      await new Promise((res) => setTimeout(res, Math.max(0, wait)));
      const report = await s.gateway.gateway.reconciler.runOnce();
      expect(report.committed).toBe(1);
      [entry] = await ledgerOf(s.gateway.url, s.keys.acme);
      expect(entry.state).toBe("committed");
    } finally {
      await s.close();
      await proxy.close();
    }
  }, 60_000);

  it("releases a held amount the upstream never settled, once its authorization has expired unused", async () => {
    const proxy = await startStallingProxy(emu.controlUrl, "swallow");
    const s = await startPaidGateway(emu, [{ id: "acme", budget: { daily: "0.005" } }], {
      upstreamUrl: proxy.url,
      timeoutMs: 1500,
      payments: { maxAuthorizationSeconds: 10 },
    });
    try {
      const before = await emu.chain!.balanceOf(s.wallet.address);
      const r = await search(s.gateway.url, s.keys.acme, { query: "swallowed" });
      expect(r.status).toBe(504);
      let [entry] = await ledgerOf(s.gateway.url, s.keys.acme);
      expect(entry.state).toBe("uncertain");
      await new Promise((res) => setTimeout(res, Math.max(0, Date.parse(entry.validBefore) + 5_500 - Date.now())));
      const report = await s.gateway.gateway.reconciler.runOnce();
      expect(report.released).toBe(1);
      [entry] = await ledgerOf(s.gateway.url, s.keys.acme);
      expect(entry.state).toBe("released");
      expect(await emu.chain!.balanceOf(s.wallet.address)).toBe(before);
      const usage = await (await fetch(`${s.gateway.url}/_tollgate/usage`, { headers: { "x-api-key": s.keys.acme } })).json();
      expect(usage.daily.spent).toBe("0.00");
    } finally {
      await s.close();
      await proxy.close();
    }
  }, 60_000);

  it("a retried Idempotency-Key after an unknown outcome is not paid again", async () => {
    const proxy = await startStallingProxy(emu.controlUrl, "forward-then-stall");
    const s = await startPaidGateway(emu, [{ id: "acme" }], { upstreamUrl: proxy.url, timeoutMs: 1500 });
    try {
      const h = { "idempotency-key": "retry-me" };
      const a = await search(s.gateway.url, s.keys.acme, { query: "retry after loss" }, h);
      expect(a.status).toBe(504);
      const b = await search(s.gateway.url, s.keys.acme, { query: "retry after loss" }, h);
      expect(b.status).toBe(504);
      expect((await b.json()).code).toBe("payment_outcome_unknown");
      expect(proxy.paidSeen()).toBe(1);
    } finally {
      await s.close();
      await proxy.close();
    }
  });
});
