// Tollgate sells over MCP (the x402 MCP transport, specs/transports-v2/mcp.md): the official MCP SDK client, with a small
// x402 wrapper built from @x402/core's client and @x402/evm's exact scheme holding only a funded wallet, lists the tools
// free, gets the PaymentRequired in an unpaid call's tool result, pays through `_meta["x402/payment"]` and reads the
// receipt in `result._meta["x402/payment-response"]`; the sale lands in the same book and ledger as an HTTP sale.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { x402Client } from "@x402/core/client";
import type { PaymentRequired } from "@x402/core/types";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EmulatorHandle } from "../../emulator/index.js";
import { spendControls, startSalesEmulator, startSellingGateway, type SellingStack } from "./stack.js";

/** The x402 wrapper an MCP client needs: a tool result asking for payment is paid and the call retried with `_meta`. */
function x402Mcp(mcp: Client, payer: x402Client) {
  const paymentRequiredOf = (r: CallToolResult): PaymentRequired | undefined => {
    const s = r.structuredContent as Partial<PaymentRequired> | undefined;
    if (r.isError && s?.x402Version && Array.isArray(s.accepts)) return s as PaymentRequired;
    const text = r.content?.[0]?.type === "text" ? r.content[0].text : undefined;
    try {
      const parsed = text ? (JSON.parse(text) as Partial<PaymentRequired>) : undefined;
      return r.isError && parsed?.x402Version && Array.isArray(parsed.accepts) ? (parsed as PaymentRequired) : undefined;
    } catch {
      return undefined;
    }
  };
  return {
    async callTool(name: string, args: Record<string, unknown>) {
      const first = (await mcp.callTool({ name, arguments: args })) as CallToolResult;
      const required = paymentRequiredOf(first);
      if (!required) return { first, result: first };
      const payment = await payer.createPaymentPayload(required);
      const result = (await mcp.callTool({ name, arguments: args, _meta: { "x402/payment": payment } })) as CallToolResult;
      return { first, required, result };
    },
  };
}

describe("Tollgate sells MCP tool calls over x402 (MCP SDK client + @x402/core client, local chain)", () => {
  let emu: EmulatorHandle;
  let s: SellingStack;
  beforeAll(async () => {
    emu = await startSalesEmulator(["x402"]);
    s = await startSellingGateway(emu, { sales: { mcp: true }, prices: { search: { price: "0.02" }, fetch: { price: "0.01" } } });
  }, 120_000);
  afterAll(async () => {
    await s?.close();
    await emu?.close();
  });

  const connect = async () => {
    const mcp = new Client({ name: "buyer", version: "1.0.0" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${s.gateway.url}/mcp`)));
    return mcp;
  };

  it("lists the sold tools free, answers an unpaid call with the PaymentRequired, sells a paid web_search", async () => {
    const chain = emu.chain!;
    const w = await chain.createFundedWallet(1_000_000n);
    const payer = new x402Client().setSpendControls(spendControls(emu));
    registerExactEvmScheme(payer, { signer: privateKeyToAccount(w.privateKey) });
    const mcp = await connect();
    try {
      const tools = await mcp.listTools();
      expect(tools.tools.map((t) => t.name).sort()).toEqual(["web_fetch", "web_search"]);
      expect(tools.tools.find((t) => t.name === "web_search")?.description).toMatch(/\$0\.02 a call/);

      const gatewayBefore = await chain.balanceOf(s.wallet.address);
      const upstreamBefore = await chain.balanceOf(chain.payee);
      const { first, required, result } = await x402Mcp(mcp, payer).callTool("web_search", { query: "edge proxy caching" });
      // The unpaid call: a tool error carrying the PaymentRequired (structuredContent and content[0].text), nothing run.
      expect(first.isError).toBe(true);
      expect(required).toMatchObject({
        x402Version: 2,
        resource: { url: expect.stringMatching(/^mcp:\/\/127\.0\.0\.1:\d+\/tools\/web_search$/) },
        accepts: [expect.objectContaining({ scheme: "exact", network: chain.network, amount: "20000", payTo: s.wallet.address })],
      });
      expect(JSON.parse((first.content[0] as { text: string }).text)).toEqual(first.structuredContent);

      // The paid retry: the search's answer, the receipt in _meta.
      expect(result.isError).toBeFalsy();
      expect((result.structuredContent as { data: { results: unknown[] } }).data.results.length).toBeGreaterThan(0);
      const receipt = result._meta?.["x402/payment-response"] as { success: boolean; transaction: string; payer: string };
      expect(receipt).toMatchObject({ success: true, payer: w.address, network: chain.network });
      expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);
      expect(result._meta?.["tollgate/sale"]).toBe("charged");

      // On chain: the buyer paid 0.02, the upstream got 0.005, the gateway kept 0.015.
      expect(1_000_000n - (await chain.balanceOf(w.address))).toBe(20_000n);
      expect((await chain.balanceOf(chain.payee)) - upstreamBefore).toBe(5_000n);
      expect((await chain.balanceOf(s.wallet.address)) - gatewayBefore).toBe(15_000n);

      // The same book and ledger as an HTTP sale: inbound == chain, outbound in the wallet tenant's ledger.
      const tenantId = `wallet-${w.address.toLowerCase().slice(2)}`;
      const report = await (
        await fetch(`${s.gateway.url}/_tollgate/admin/sales?check=chain&tenant=${tenantId}`, { headers: { "x-api-key": s.adminKey } })
      ).json();
      expect(report.buyers).toEqual([
        { tenant: tenantId, payer: w.address, sales: 1, inbound: "0.02", outbound: "0.005", margin: "0.015" },
      ]);
      expect(report.sales[0]).toMatchObject({ row: "mcp.web_search", transaction: receipt.transaction, chain: "matched" });
    } finally {
      await mcp.close();
    }
  }, 120_000);

  it("a settlement that fails returns no content; a refused call settles nothing; a bad payload is asked again", async () => {
    const chain = emu.chain!;
    const w = await chain.createFundedWallet(1_000_000n);
    const payer = new x402Client().setSpendControls(spendControls(emu));
    registerExactEvmScheme(payer, { signer: privateKeyToAccount(w.privateKey) });
    const mcp = await connect();
    try {
      const bad = (await mcp.callTool({
        name: "web_search",
        arguments: { query: "x" },
        _meta: { "x402/payment": { x402Version: 2 } },
      })) as CallToolResult;
      expect(bad.isError).toBe(true);
      expect(bad.structuredContent).toMatchObject({ x402Version: 2, error: expect.stringMatching(/does not answer this offer/) });

      // The facilitator fails to settle after the search ran: the search's content is withheld, nothing charged.
      emu.facilitator!.switches.failSettle = true;
      try {
        const failed = await x402Mcp(mcp, payer).callTool("web_search", { query: "settlement fails" });
        expect(failed.required).toBeDefined();
        expect(failed.result.isError).toBe(true);
        expect(failed.result.structuredContent).toMatchObject({ x402Version: 2, error: expect.stringMatching(/settlement failed/i) });
        expect(JSON.stringify(failed.result.content)).not.toMatch(/results/);
        expect(failed.result._meta?.["x402/payment-response"]).toMatchObject({ success: false });
      } finally {
        emu.facilitator!.switches.failSettle = false;
      }
      expect(await chain.balanceOf(w.address)).toBe(1_000_000n);

      // The wallet tenant exists now (the tool ran); its kill switch refuses the next paid call before anything settles.
      const tenant = `wallet-${w.address.toLowerCase().slice(2)}`;
      const off = await fetch(`${s.gateway.url}/_tollgate/admin/tenants/${tenant}/disable`, {
        method: "POST",
        headers: { "x-api-key": s.adminKey },
      });
      expect(off.status).toBe(200);
      const refused = await x402Mcp(mcp, payer).callTool("web_search", { query: "after the kill switch" });
      expect(refused.result.isError).toBe(true);
      expect(refused.result.structuredContent).toMatchObject({ error: { code: "tenant_disabled" } });
      expect(refused.result._meta?.["x402/payment-response"]).toBeUndefined();
      expect(await chain.balanceOf(w.address)).toBe(1_000_000n);
      expect(await s.gateway.gateway.services.sales!.book.list(tenant)).toEqual([]);
    } finally {
      await mcp.close();
    }
  }, 120_000);

  it("a retry naming the same payment-identifier gets the first result and is charged once", async () => {
    const chain = emu.chain!;
    const w = await chain.createFundedWallet(1_000_000n);
    const payer = new x402Client().setSpendControls(spendControls(emu));
    registerExactEvmScheme(payer, { signer: privateKeyToAccount(w.privateKey) });
    const id = `mcp_${crypto.randomUUID().replace(/-/g, "")}`;
    payer.onBeforePaymentCreation(async ({ paymentRequired }) => {
      const ext = (paymentRequired.extensions ??= {}) as Record<string, { info?: Record<string, unknown> }>;
      ext["payment-identifier"] = { ...ext["payment-identifier"], info: { ...ext["payment-identifier"]?.info, id } };
    });
    const mcp = await connect();
    try {
      const first = await x402Mcp(mcp, payer).callTool("web_search", { query: "charged once" });
      expect(first.result._meta?.["tollgate/sale"]).toBe("charged");
      // The client retries (a fresh authorization, the same payment-identifier): the first result, not charged again.
      const again = await x402Mcp(mcp, payer).callTool("web_search", { query: "charged once" });
      expect(again.result._meta?.["tollgate/sale"]).toBe("replayed");
      expect(again.result.structuredContent).toEqual(first.result.structuredContent);
      expect(again.result._meta?.["x402/payment-response"]).toEqual(first.result._meta?.["x402/payment-response"]);
      expect(1_000_000n - (await chain.balanceOf(w.address))).toBe(20_000n);
      expect(await s.gateway.gateway.services.sales!.book.list(`wallet-${w.address.toLowerCase().slice(2)}`)).toHaveLength(1);
    } finally {
      await mcp.close();
    }
  }, 120_000);

  it("speaks the org.x402/payment extension to a 2026-07-28 client that declares it", async () => {
    const call = (capabilities: Record<string, unknown>) =>
      fetch(`${s.gateway.url}/mcp`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/json, text/event-stream",
          "mcp-protocol-version": "2026-07-28",
        },
        body: JSON.stringify({
          jsonrpc: "2.0",
          id: 7,
          method: "tools/call",
          params: {
            name: "web_search",
            arguments: { query: "q" },
            _meta: {
              "io.modelcontextprotocol/protocolVersion": "2026-07-28",
              "io.modelcontextprotocol/clientCapabilities": capabilities,
            },
          },
        }),
      }).then((r) => r.json());
    const withExt = await call({ extensions: { "org.x402/payment": {} } });
    expect(withExt.result).toMatchObject({
      resultType: "payment_required",
      paymentRequired: { x402Version: 2, accepts: [expect.any(Object)] },
    });
    const without = await call({});
    expect(without.result).toMatchObject({ resultType: "complete", isError: true, structuredContent: { x402Version: 2 } });
    const discover = await fetch(`${s.gateway.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json", "mcp-protocol-version": "2026-07-28" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "server/discover", params: {} }),
    }).then((r) => r.json());
    expect(discover.result.capabilities.extensions).toEqual({ "org.x402/payment": {} });
  });

  it("a caller with a tenant key is not a buyer: /mcp serves it as before", async () => {
    const r = await fetch(`${s.gateway.url}/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer tg_wrong" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
    });
    expect(r.status).toBe(401);
  });
});
