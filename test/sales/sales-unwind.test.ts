// A sale whose settlement fails after the upstream created what was bought: the buyer hears a 402 saying nothing was
// charged and that the sandbox was stopped; the chain shows no transfer; the upstream shows the sandbox closed; the
// sales book holds no inbound line; the wallet tenant's quota slot is free again (its next purchase goes through).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { json, startSalesEmulator, startSellingGateway, v2Buyer, type SellingStack } from "./stack.js";

const FUNDS = 1_000_000n;

describe("a settlement that fails after a sandbox was created", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  beforeAll(async () => {
    emu = await startSalesEmulator(["x402", "sandboxes"]);
    // One sandbox at a time per wallet: the stopped one must free its slot for the next purchase.
    s = await startSellingGateway(emu, { buyer: { quotas: { maxSandboxes: 1, maxSessions: 1 } } });
  }, 180_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  it("stops the sandbox, answers 402 settlement_failed, charges nothing and books nothing", async () => {
    const chain = emu.chain!;
    const buyer = await v2Buyer(emu, FUNDS);
    const gatewayBefore = await chain.balanceOf(s.wallet.address);
    emu.facilitator!.switches.failSettle = true;
    let r: Response;
    try {
      r = await buyer.pay(`${s.gateway.url}/api/sandbox`, json({ imageName: "node" }));
    } finally {
      emu.facilitator!.switches.failSettle = false;
    }
    expect(r.status).toBe(402);
    const body = await r.json();
    expect(body.code, JSON.stringify(body) + s.logs.filter((l) => /unpaid|stop/.test(l)).join("\n")).toBe("settlement_failed");
    expect(body.message).toContain("nothing was charged");
    const id = r.headers.get("x-tollgate-sale-stopped");
    expect(id, `${body.message}\n${s.logs.filter((l) => /unpaid/.test(l)).join("\n")}`).toBeTruthy();
    expect(body.message).toContain(`The sandbox ${id} was stopped.`);
    // No token of the sandbox reached the buyer.
    expect(JSON.stringify(body)).not.toContain("runtime");
    expect(r.headers.get("x-tollgate-wallet-token")).toBeNull();

    // The upstream's view: the sandbox is closed.
    const up = await fetch(`${emu.controlUrl}/api/sandbox/${id}`, { headers: { "x-api-key": emu.apiKey } });
    expect(up.status).toBe(200);
    expect((await up.json()).status).toBe("closed");
    // The chain's: nothing moved.
    expect(await chain.balanceOf(buyer.address)).toBe(FUNDS);
    expect(await chain.balanceOf(s.wallet.address)).toBe(gatewayBefore);
    // The books': no inbound.
    const tenant = `wallet-${buyer.address.toLowerCase().slice(2)}`;
    expect(await s.gateway.gateway.services.sales!.book.list(tenant)).toHaveLength(0);
    const report = await fetch(`${s.gateway.url}/_tollgate/admin/sales?tenant=${tenant}`, { headers: { "x-api-key": s.adminKey } });
    expect(report.status).toBe(200);
    expect((await report.json()).sales).toEqual([]);
    // The wallet tenant's credit hold for the sandbox is closed (settled at the stop), not left open.
    expect(await s.gateway.gateway.services.stores.ledger.list({ tenant, state: "reserved" })).toEqual([]);

    // The quota slot is free: the next purchase (settled) goes through, and is charged once.
    const again = await buyer.pay(`${s.gateway.url}/api/sandbox`, json({ imageName: "node" }));
    expect(again.status).toBe(200);
    expect(again.headers.get("x-tollgate-sale")).toBe("charged");
    const sbx = await again.json();
    expect(FUNDS - (await chain.balanceOf(buyer.address))).toBe(50_000n);
    expect(await s.gateway.gateway.services.sales!.book.list(tenant)).toHaveLength(1);
    const stop = await fetch(`${s.gateway.url}/api/sandbox/${sbx.id}/stop`, {
      method: "PUT",
      headers: { authorization: `Bearer ${again.headers.get("x-tollgate-wallet-token")}` },
    });
    expect(stop.status).toBe(200);
  });
});
