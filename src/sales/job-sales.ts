// Credit-billed jobs sold with x402 `upto` (Permit2): the buyer signs the job's reservation × the markup as a maximum;
// the start settles nothing; when the job ends the sale settles ONCE for the credits the job used (the credit meter's
// ledger entry for it, outbound) × the markup, at least the floor, at most what was signed — and nothing at all (no
// transaction) when the job failed or used nothing. A buyer may never come back, so the gateway follows the job
// itself: whichever comes first settles it — a read of the job through the gateway showing its end (jobReadStep), a
// follow-up read of its status on a timer of the selling instance (Node), or `settleDue`, the sweep any instance can
// run (the reconciler's pass; it also settles a job still running at the end of its window, before the buyer's
// authorization lapses). Pending sales live in the shared key-value store, filed in the fleet's due index (the one time
// sales use, StateStores.due) for any instance's sweep to walk; a claim in the same store before the facilitator's settle
// makes the settlement exactly-once across the fleet.
import { encodePaymentResponseHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { MiddlewareHandler } from "hono";
import type { SalePrice } from "../../config/sales-schema.js";
import type { GatewayEnv } from "../context.js";
import { MCP_SCOPES, type McpScope } from "../identity/tokens.js";
import { TERMINAL } from "../payments/index.js";
import type { GatewayServices } from "../services.js";
import type { SalesBook } from "./book.js";
import { marked } from "./price.js";
import { closeUptoSale } from "./upto-close.js";
import { WALLET_TENANT_PREFIX } from "./wallet-tenants.js";

/** A job's pending sale is kept this long past its window (a sweep after a restart still finds it). */
const KEEP_PAST_MS = 3600_000;
/** The least time between two follow-up reads of one job's status, fleet-wide. */
const POLL_MS = 5_000;
/** The selling instance's follow-up reads: after these delays, then every last one until the job's window ends. */
const FOLLOW_MS = [2_000, 4_000, 8_000, 15_000, 30_000];
/** How many pending sales one sweep looks at. */
const SWEEP_BATCH = 200;
/** The due index's queue of pending job sales: each filed at its start, so every sweep looks at it until it settles. */
const JOB_SALES = "job-sale";

/** Job statuses that end a job without charging its buyer. */
const FAILED = new Set(["failed", "error", "cancelled"]);

/** A sold job whose `upto` payment settles when it ends. */
export interface PendingJob {
  /** The upstream's job id. */
  id: string;
  /** The start row (e.g. `crawl.start`), and the job's status path through the gateway. */
  row: string;
  statusPath: string;
  /** The origin the purchase came in on (the follow-up reads go to the gateway itself). */
  origin: string;
  tenant: string;
  payer: string;
  payTo: string;
  startedAt: number;
  /** When it is settled anyway (ms), if it has not ended: before the buyer's authorization lapses. */
  settleBy: number;
  /** The most the job costs upstream (its reservation), micro-USD. */
  maxCostMicroUsd: string;
  /** The ledger entry of the job's credits (the credit meter's hold), when the gateway bills them. */
  entry?: string;
  decimals: number;
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  requestId?: string;
  paymentId?: string;
}

const key = {
  pending: (id: string) => `sales:jobs:${id}`,
  claim: (id: string) => `sales:jobs:${id}:settling`,
  receipt: (id: string) => `sales:jobs:${id}:receipt`,
  poll: (id: string) => `sales:jobs:${id}:poll`,
};

/** micro-USD in atomic units of a token with `decimals` (rounded down: never above what was used). */
const toUnits = (microUsd: bigint, decimals: number) =>
  decimals >= 6 ? microUsd * 10n ** BigInt(decimals - 6) : microUsd / 10n ** BigInt(6 - decimals);

/** What a job that used `costMicroUsd` upstream is charged: cost × (1 + markup), at least the floor, at most the maximum. */
export function jobAmount(sale: Pick<PendingJob, "decimals" | "requirements">, price: SalePrice, costMicroUsd: bigint) {
  if (costMicroUsd <= 0n) return { microUsd: 0n, units: 0n };
  const micro = marked(costMicroUsd, price);
  const units = toUnits(micro, sale.decimals);
  const max = BigInt(sale.requirements.amount);
  return { microUsd: micro, units: units > max ? max : units };
}

export interface JobSalesParts {
  services: GatewayServices;
  price: SalePrice;
  facilitator: FacilitatorClient;
  book: SalesBook;
  /** The gateway calling itself (the follow-up reads of a job's status, as its wallet tenant). */
  self: (req: Request, env: unknown) => Promise<Response>;
}

export type JobSettleReason = "read" | "window_end";

export class JobSales {
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  constructor(private readonly parts: JobSalesParts) {}

  get services(): GatewayServices {
    return this.parts.services;
  }

  /** Keeps `sale` until its job ends, and starts following it from this instance. */
  async open(sale: PendingJob): Promise<void> {
    const { kv, due } = this.parts.services.stores;
    await kv.set(key.pending(sale.id), JSON.stringify(sale), sale.settleBy - sale.startedAt + KEEP_PAST_MS);
    await due.add(JOB_SALES, sale.id, sale.startedAt);
    this.follow(sale.id, 0);
  }

  /** The pending sale of job `id`, if one is waiting for it to end. */
  async pending(id: string): Promise<PendingJob | undefined> {
    const raw = await this.parts.services.stores.kv.get(key.pending(id));
    return raw ? (JSON.parse(raw) as PendingJob) : undefined;
  }

  /** The settlement of job `id`'s sale, once it settled (kept a day): what an MCP buyer's result carries. */
  async receipt(id: string): Promise<SettleResponse | undefined> {
    const raw = await this.parts.services.stores.kv.get(key.receipt(id));
    return raw ? (JSON.parse(raw) as SettleResponse) : undefined;
  }

  /**
   * Settles job `id`'s sale once across the fleet, when `status` shows the job ended (or its window is over): the
   * receipt, or undefined when there is nothing to settle (no pending sale, still running, or settled elsewhere).
   */
  async settle(id: string, status: string | undefined, reason: JobSettleReason): Promise<SettleResponse | undefined> {
    const { services, facilitator, book, price } = this.parts;
    const sale = await this.pending(id);
    if (!sale) return undefined;
    const ended = status !== undefined && TERMINAL.has(status);
    if (!ended && reason !== "window_end") return undefined;
    if (!(await services.stores.kv.setIfAbsent(key.claim(id), services.instanceId, sale.settleBy - sale.startedAt + KEEP_PAST_MS)))
      return undefined;
    this.unfollow(id);
    const cost = status !== undefined && FAILED.has(status) ? 0n : await this.costOf(sale);
    const amount = jobAmount(sale, price, cost);
    const network = sale.requirements.network;
    let settled: SettleResponse;
    if (amount.units === 0n) {
      // `upto` allows zero: nothing to move, the authorization simply lapses.
      settled = { success: true, transaction: "", network, payer: sale.payer, amount: "0" };
    } else {
      try {
        settled = await facilitator.settle(sale.payload, { ...sale.requirements, amount: amount.units.toString() });
      } catch (err) {
        const errorMessage = String((err as Error)?.message ?? err);
        settled = { success: false, errorReason: "facilitator_unavailable", errorMessage, transaction: "", network };
      }
    }
    await services.stores.kv.set(key.receipt(id), JSON.stringify(settled), 24 * 3600_000);
    await services.stores.kv.delete(key.pending(id));
    await services.stores.due.remove(JOB_SALES, id);
    const fields = {
      tenant: sale.tenant,
      row: sale.row,
      job: id,
      status,
      reason,
      costMicroUsd: cost.toString(),
      amount: amount.units.toString(),
    };
    return closeUptoSale(services, book, "job", sale, settled, amount, fields, { class: "jobs", network, job: id });
  }

  /**
   * The sweep: every pending job sale this instance (or any) left is followed once more (a read of its status through
   * the gateway, at most every few seconds per job fleet-wide), and one whose window is over is settled now. Safe to run
   * on every instance at once. Returns how many sales it settled.
   */
  async settleDue(now = this.parts.services.now()): Promise<number> {
    const { due } = this.parts.services.stores;
    let settledCount = 0;
    for (const id of await due.due(JOB_SALES, now, SWEEP_BATCH)) {
      const sale = await this.pending(id);
      // Settled (its own settle took it out) or kept past its window and forgotten: out of the index.
      if (!sale) await due.remove(JOB_SALES, id);
      else if (await this.check(sale, now)) settledCount++;
    }
    return settledCount;
  }

  /** One follow-up of `sale`: settled at the end of its window, else its status read (the read settles an ended job). */
  private async check(sale: PendingJob, now: number): Promise<boolean> {
    if (now >= sale.settleBy) {
      // One last look first: a job that did end is charged what it used, not what was held.
      await this.readStatus(sale);
      return (await this.settle(sale.id, undefined, "window_end")) !== undefined || !(await this.pending(sale.id));
    }
    if (!(await this.parts.services.stores.kv.setIfAbsent(key.poll(sale.id), "1", POLL_MS))) return false;
    await this.readStatus(sale);
    return !(await this.pending(sale.id));
  }

  /** Reads the job's status through the gateway as its wallet tenant (the job read row settles what ended). */
  private async readStatus(sale: PendingJob): Promise<void> {
    const { services, self } = this.parts;
    try {
      // A wallet tenant made on another instance may not be in this one's directory yet.
      if (!services.directory.get(sale.tenant)) await services.tenantSync.refresh();
      const tenant = services.directory.get(sale.tenant);
      if (!tenant?.enabled) return;
      const { token } = await services.tokens.mint({
        tenant: tenant.id,
        kind: "mcp",
        scopes: tenant.scopes.filter((x): x is McpScope => (MCP_SCOPES as readonly string[]).includes(x)),
        cap: 0n,
        keyless: true,
        ttlSeconds: 60,
      });
      const res = await self(new Request(`${sale.origin}${sale.statusPath}`, { headers: { authorization: `Bearer ${token}` } }), undefined);
      await res.body?.cancel();
    } catch (err) {
      services.logger.error("job sale follow-up read failed", {
        tenant: sale.tenant,
        job: sale.id,
        error: String((err as Error)?.message ?? err),
      });
    }
  }

  /** What the job used upstream, micro-USD: its credit entry as the meter settled it (released: nothing). */
  private async costOf(sale: PendingJob): Promise<bigint> {
    const { services } = this.parts;
    const e = sale.entry ? await services.stores.ledger.get(sale.entry) : undefined;
    if (!e) {
      services.logger.error("job sale without its credit entry: charged its maximum", { tenant: sale.tenant, job: sale.id });
      return BigInt(sale.maxCostMicroUsd);
    }
    if (e.state === "released") return 0n;
    // Committed: what the upstream billed (before the tenant's multiplier); still held at the window's end: the hold.
    return BigInt(e.costAmount ?? e.amount);
  }

  /** The selling instance's own follow-up reads (a process timer, unref'd; a Worker has none and relies on the sweep). */
  private follow(id: string, step: number): void {
    if (typeof setTimeout !== "function") return;
    const t = setTimeout(
      () => {
        this.timers.delete(id);
        void (async () => {
          const sale = await this.pending(id);
          if (!sale) return;
          await this.check(sale, this.parts.services.now());
          if (await this.pending(id)) this.follow(id, step + 1);
        })().catch(() => {});
      },
      FOLLOW_MS[Math.min(step, FOLLOW_MS.length - 1)],
    );
    (t as { unref?: () => void }).unref?.();
    this.timers.set(id, t);
  }

  private unfollow(id: string): void {
    const t = this.timers.get(id);
    if (t) clearTimeout(t);
    this.timers.delete(id);
  }
}

/**
 * In front of a sold job's read rows (get, status): once the answer shows the job ended (the handler has settled its
 * credits by then), its sale is settled, and the answer carries the receipt (PAYMENT-RESPONSE) and `x-tollgate-sale`.
 */
export function jobReadStep(jobs: JobSales): MiddlewareHandler<GatewayEnv> {
  return async function settleJobSale(c, next) {
    await next();
    const res = c.res;
    const id = c.req.param("id");
    if (!id || res.status < 200 || res.status >= 300 || !(res.headers.get("content-type") ?? "").includes("json")) return;
    // Only a wallet tenant's jobs were sold: any other tenant's read costs no look-up.
    const caller = c.get("caller");
    const tenant = caller && "tenant" in caller ? caller.tenant?.id : undefined;
    if (!tenant?.startsWith(WALLET_TENANT_PREFIX) || !(await jobs.pending(id))) return;
    const status = await res
      .clone()
      .json()
      .then((b: unknown) => (b && typeof b === "object" ? (b as { status?: unknown }).status : undefined))
      .catch(() => undefined);
    const settled = await jobs.settle(id, typeof status === "string" ? status : undefined, "read");
    if (!settled) return;
    const headers = new Headers(res.headers);
    headers.set("payment-response", encodePaymentResponseHeader(settled));
    headers.set("x-tollgate-sale", settled.success && settled.amount !== "0" ? "charged" : "not-charged");
    headers.set("access-control-expose-headers", "payment-response, x-tollgate-sale");
    c.res = undefined as unknown as Response;
    c.res = new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  };
}
