// The books on Durable Objects inside workerd: credits settled whole above their hold and corrected late count in the
// tenant's usage on another instance, and the chargeback export from either instance sums exactly to the ledger.
import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { doStores } from "../../src/state/durable-client.js";
import { hashTenantKey } from "../../src/identity/tenants.js";
import { usdToAtomic } from "../../src/payments/money.js";

const bindings = env as unknown as Record<string, unknown>;

describe("credit books on Durable Objects (workerd)", () => {
  it("settles above the hold and late, and exports sums equal to the ledger from either instance", async () => {
    const ops = `tg_ops_${crypto.randomUUID()}`;
    const acme = `tg_acme_${crypto.randomUUID()}`;
    const config = parseConfig({
      server: { logLevel: "silent" },
      upstream: { baseUrl: "http://127.0.0.1:9" },
      tenants: [
        { id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(ops) }] },
        { id: "acme", creditMultiplier: "1.25", keys: [{ hash: await hashTenantKey(acme) }] },
      ],
    });
    const namespace = `books-${crypto.randomUUID()}`;
    const make = () => createGateway(config, { secrets: { tokenSecret: "w".repeat(40) }, stores: doStores(bindings, { namespace }) });
    const a = make();
    const b = make();
    const ledger = a.services.stores.ledger;
    const now = Date.now();
    const base = { tenant: "acme", fingerprint: "f", kind: "credits" as const, multiplier: "1.25" };
    await ledger.reserve({ ...base, id: "x1", route: "extract.start", amount: "12500", meter: "units" }, {}, now);
    await ledger.commit("x1", undefined, now, 112_500n, { settledFrom: "upstream", costAmount: "90000", estimatedAmount: "10000" });
    await ledger.reserve(
      { ...base, id: "s1", route: "session.create", amount: "21250", meter: "minutes", resource: "session:s1" },
      {},
      now,
    );
    await ledger.commit("s1", undefined, now, 2_125n, { settledFrom: "estimate", costAmount: "1700", estimatedAmount: "1700" });
    expect(await ledger.resettle("s1", 250n, { settledFrom: "upstream", costAmount: "200" }, now + 1)).toBe(-1875n);
    await ledger.reserve(
      { id: "p1", tenant: "ops", route: "web.search", fingerprint: "f", amount: "5000", asset: "0xA", network: "eip155:1", payee: "0xP" },
      {},
      now,
    );

    const usage = (await (await b.app.request("/_tollgate/usage", { headers: { "x-api-key": acme } })).json()) as any;
    expect(usage.creditMultiplier).toBe("1.25");
    expect(usdToAtomic(usage.daily.byKind.credits)).toBe(112_750n);
    for (const g of [a, b]) {
      const res = await g.app.request("/_tollgate/admin/usage/export?format=json", { headers: { "x-api-key": ops } });
      expect(res.status).toBe(200);
      const x = (await res.json()) as {
        rows: Array<{ tenant: string; route: string; amountUsd: string; costUsd: string }>;
        totalUsd: string;
      };
      expect(x.rows.reduce((s, r) => s + usdToAtomic(r.amountUsd), 0n)).toBe(112_750n + 5_000n);
      expect(x.rows.find((r) => r.route === "extract.start")).toMatchObject({ tenant: "acme", amountUsd: "0.1125", costUsd: "0.09" });
    }
  });
});
