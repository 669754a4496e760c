// The sales book in the usage export (GET /_tollgate/admin/usage/export, JSON and CSV), in the export's own shape: one
// row per wallet buyer and day with kind `sale` (route `sales`): `entries` the calls it bought, `amountUsd` and
// `committedUsd` what it paid the gateway (inbound), `costUsd` what the gateway paid the upstream for it that day
// (outbound: its tenant's committed spend rows of the same day), so amountUsd − costUsd is the margin. Sale rows are
// money received: the export's `totalUsd` stays the spend. The JSON adds `buyers` (per buyer over the window).
import type { GatewayServices } from "../services.js";
import { atomicToUsd, type usageExport, usdToAtomic } from "../payments/index.js";
import { signedUsd } from "./buyers.js";

type UsageExport = Awaited<ReturnType<typeof usageExport>>;
type UsageRow = UsageExport["rows"][number];

export interface BuyerUsage {
  tenant: string;
  payer: string;
  sales: number;
  inboundUsd: string;
  outboundUsd: string;
  marginUsd: string;
}

/** `x` with the sales of its window: a `sale` row per buyer and day, and `buyers`. Unchanged without [sales]. */
export async function withSales(
  services: GatewayServices,
  x: UsageExport,
): Promise<UsageExport & { buyers?: BuyerUsage[]; salesTotalUsd?: string }> {
  const book = services.sales?.book;
  if (!book) return x;
  const from = Date.parse(x.from);
  const to = Date.parse(x.to);
  const sales = (await book.list()).filter((s) => s.at >= from && s.at < to);
  const day = (at: number) => new Date(at).toISOString().slice(0, 10);
  // Outbound per tenant and day: the export's own committed rows of that tenant.
  const outbound = new Map<string, bigint>();
  for (const r of x.rows) {
    const key = `${r.tenant} ${r.day}`;
    outbound.set(key, (outbound.get(key) ?? 0n) + usdToAtomic(r.committedUsd));
  }
  const perDay = new Map<string, { tenant: string; day: string; n: number; inbound: bigint }>();
  const perBuyer = new Map<string, { payer: string; n: number; inbound: bigint; days: Set<string> }>();
  let total = 0n;
  for (const s of sales) {
    const d = day(s.at);
    const key = `${s.tenant} ${d}`;
    const g = perDay.get(key) ?? { tenant: s.tenant, day: d, n: 0, inbound: 0n };
    g.n++;
    g.inbound += BigInt(s.priceMicroUsd);
    perDay.set(key, g);
    const b = perBuyer.get(s.tenant) ?? { payer: s.payer, n: 0, inbound: 0n, days: new Set<string>() };
    b.n++;
    b.inbound += BigInt(s.priceMicroUsd);
    b.days.add(d);
    perBuyer.set(s.tenant, b);
    total += BigInt(s.priceMicroUsd);
  }
  const accounts = x.rows.some((r) => r.account !== undefined);
  const saleRows: UsageRow[] = [...perDay.entries()].map(([key, g]) => ({
    tenant: g.tenant,
    ...(accounts ? { account: "" } : {}),
    day: g.day,
    kind: "sale",
    route: "sales",
    entries: g.n,
    amountUsd: atomicToUsd(g.inbound),
    committedUsd: atomicToUsd(g.inbound),
    heldUsd: "0",
    costUsd: atomicToUsd(outbound.get(key) ?? 0n),
  }));
  const rows = [...x.rows, ...saleRows].sort((a, b) =>
    a.tenant !== b.tenant ? (a.tenant < b.tenant ? -1 : 1) : a.day !== b.day ? (a.day < b.day ? -1 : 1) : a.kind < b.kind ? -1 : 1,
  );
  const buyers = [...perBuyer.entries()].map(([tenant, b]) => {
    const out = [...b.days].reduce((a, d) => a + (outbound.get(`${tenant} ${d}`) ?? 0n), 0n);
    return {
      tenant,
      payer: b.payer,
      sales: b.n,
      inboundUsd: atomicToUsd(b.inbound),
      outboundUsd: atomicToUsd(out),
      marginUsd: signedUsd(b.inbound - out),
    };
  });
  return { ...x, rows, buyers, salesTotalUsd: atomicToUsd(total) };
}
