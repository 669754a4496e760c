// Metered sales with x402 `upto` (Permit2): the buyer signs a maximum, the gateway settles what was used, up to it —
// zero allowed, then nothing moves on chain. Sessions and sandboxes priced with `scheme = "upto"` are sold by time:
// the purchase signs the whole window (`minutes` × the per-minute price), the creation settles nothing, and the sale is
// settled once, for the minutes used (rounded up, at least one; never below the floor), when the resource is stopped
// through the gateway or its window ends. A creation the upstream refused settles nothing. Kept in the shared key-value
// store (the signed payload until it settles) and filed in the shared due index at its window's end, so a stop on any
// instance, or the sweep of any instance after the window (./due.ts), settles it, once (a claim before the settle).
import { encodePaymentResponseHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import { type PaymentPayload, type PaymentRequirements, SettleError, type SettleResponse } from "@x402/core/types";
import type { Context, MiddlewareHandler } from "hono";
import type { SaleClass, SalesConfig } from "../../config/sales-schema.js";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { SalesBook } from "./book.js";
import type { DueSweep } from "./due.js";
import { closeUptoSale } from "./upto-close.js";

/** The signed window outlives the sold minutes by this much: the settlement at the window's end must still verify. */
export const UPTO_SLACK_SECONDS = 300;
/** A pending metered sale is kept this long past its window (a settlement after a restart still finds it). */
const KEEP_PAST_MS = 3600_000;

/** The `upto` facilitators' addresses (what a buyer's Permit2 witness names), per network, from GET /supported. */
export class UptoFacilitators {
  private known: Promise<Record<string, `0x${string}`>> | undefined;
  constructor(private readonly facilitator: FacilitatorClient) {}

  /** The address per network; `{}` while the facilitator cannot be asked (then only `exact` is offered, and asked again). */
  async byNetwork(): Promise<Record<string, `0x${string}`>> {
    this.known ??= this.facilitator.getSupported().then((s) => {
      const out: Record<string, `0x${string}`> = {};
      for (const k of s.kinds) {
        const a = (k.extra as { facilitatorAddress?: unknown } | undefined)?.facilitatorAddress;
        if (k.x402Version === 2 && k.scheme === "upto" && typeof a === "string" && /^0x[0-9a-fA-F]{40}$/.test(a))
          out[k.network] = a as `0x${string}`;
      }
      return out;
    });
    try {
      return await this.known;
    } catch {
      this.known = undefined;
      return {};
    }
  }
}

/** A sold session or sandbox whose `upto` payment settles when it ends. */
export interface PendingSale {
  kind: "session" | "sandbox";
  id: string;
  tenant: string;
  payer: string;
  payTo: string;
  row: string;
  cls: SaleClass;
  startedAt: number;
  /** The window bought, minutes. */
  minutes: number;
  /** The price of a minute and the floor, micro-USD. */
  perMinuteMicroUsd: string;
  floorMicroUsd: string;
  /** The asset's atomic units per micro-USD multiplier/divider, as the offer converted (decimals). */
  decimals: number;
  payload: PaymentPayload;
  requirements: PaymentRequirements;
  requestId?: string;
  paymentId?: string;
  /** When it ended (a stop whose settlement waits for the facilitator): the minutes are counted to here. */
  endedAt?: number;
}

const pendingKey = (kind: string, id: string) => `sales:metered:${kind}:${id}`;
const claimKey = (kind: string, id: string) => `sales:metered:${kind}:${id}:settling`;

/** micro-USD in atomic units of a token with `decimals` (rounded down: a buyer is never charged above the minutes used). */
const toUnits = (microUsd: bigint, decimals: number) =>
  decimals >= 6 ? microUsd * 10n ** BigInt(decimals - 6) : microUsd / 10n ** BigInt(6 - decimals);

/** What `sale` costs after `usedMs`: ceil(minutes) × the minute's price, at least the floor, at most the signed maximum. */
export function meteredAmount(
  sale: Pick<PendingSale, "perMinuteMicroUsd" | "floorMicroUsd" | "decimals" | "requirements" | "minutes">,
  usedMs: number,
) {
  const minutes = BigInt(Math.min(sale.minutes, Math.max(1, Math.ceil(usedMs / 60_000))));
  let micro = minutes * BigInt(sale.perMinuteMicroUsd);
  const floor = BigInt(sale.floorMicroUsd);
  if (micro < floor) micro = floor;
  let units = toUnits(micro, sale.decimals);
  const max = BigInt(sale.requirements.amount);
  if (units > max) units = max;
  return { minutes, microUsd: micro, units };
}

export interface MeteredParts {
  services: GatewayServices;
  sales: SalesConfig;
  facilitator: FacilitatorClient;
  book: SalesBook;
  /** The fleet's sweep of what falls due (./due.ts): the time sales' window ends are a queue of it. */
  due: DueSweep;
}

/** The due index's queue of time sales (./due.ts): `<kind>:<id>`, due at the window's end. */
const TIME_SALES = "time-sale";
/** A settlement the facilitator could not be asked for is tried again by the next sweep, no sooner than this. */
const RETRY_MS = 15_000;

/**
 * Time sales until they settle: each kept in the shared store and filed in the shared due index at its window's end, so
 * a stop on any instance, or the sweep on any instance after the window (./due.ts), settles it; the claim makes it once.
 */
export class MeteredSales {
  constructor(private readonly parts: MeteredParts) {
    parts.due.register(TIME_SALES, async (item) => {
      const [kind, ...rest] = item.split(":");
      if (kind !== "session" && kind !== "sandbox") return;
      const settled = await this.settle(kind, rest.join(":"), "window_end");
      // The facilitator could not be asked: the sale is still pending (filed again), the item stays due.
      if (settled?.errorReason === "facilitator_unavailable") throw new Error(settled.errorMessage ?? "facilitator unavailable");
    });
  }

  /** Keeps `sale` until it ends, due for settlement at the end of its window if nothing stopped it before. */
  async open(sale: PendingSale): Promise<void> {
    const { services, due } = this.parts;
    const windowMs = sale.minutes * 60_000;
    await services.stores.kv.set(pendingKey(sale.kind, sale.id), JSON.stringify(sale), windowMs + KEEP_PAST_MS);
    await due.schedule(TIME_SALES, `${sale.kind}:${sale.id}`, sale.startedAt + windowMs);
  }

  /**
   * Settles the pending sale of `kind` `id` (once across the fleet) for the time used: the receipt, or undefined when
   * there was none (not a metered sale, settled already, or being settled by another instance). A facilitator that
   * could not be asked leaves the sale pending, its end noted, for the next sweep (`facilitator_unavailable`).
   */
  async settle(kind: "session" | "sandbox", id: string, reason: "stop" | "window_end"): Promise<SettleResponse | undefined> {
    const { services, facilitator, book, due } = this.parts;
    const raw = await services.stores.kv.get(pendingKey(kind, id));
    if (!raw) return undefined;
    const sale = JSON.parse(raw) as PendingSale;
    const claim = claimKey(kind, id);
    if (!(await services.stores.kv.setIfAbsent(claim, services.instanceId, sale.minutes * 60_000 + KEEP_PAST_MS))) return undefined;
    const endedAt = sale.endedAt ?? services.now();
    const used = meteredAmount(sale, endedAt - sale.startedAt);
    let settled: SettleResponse;
    try {
      settled = await facilitator.settle(sale.payload, { ...sale.requirements, amount: used.units.toString() });
    } catch (err) {
      const answer = err instanceof SettleError ? err : undefined;
      settled = {
        success: false,
        errorReason: answer?.errorReason ?? "facilitator_unavailable",
        errorMessage: answer?.errorMessage ?? String((err as Error)?.message ?? err),
        transaction: answer?.transaction ?? "",
        network: sale.requirements.network,
      } as SettleResponse;
    }
    const fields = { tenant: sale.tenant, row: sale.row, id, reason, minutes: Number(used.minutes), amount: used.units.toString() };
    if (settled.errorReason === "facilitator_unavailable") {
      // No answer: nothing is known to have moved. Pending again, with its end, for the sweep to try once more.
      await services.stores.kv.set(pendingKey(kind, id), JSON.stringify({ ...sale, endedAt }), sale.minutes * 60_000 + KEEP_PAST_MS);
      await due.schedule(TIME_SALES, `${kind}:${id}`, services.now() + RETRY_MS);
      await services.stores.kv.delete(claim);
      services.logger.error("metered sale not settled; will retry", { ...fields, error: settled.errorMessage });
      return settled;
    }
    await services.stores.kv.delete(pendingKey(kind, id));
    await due.cancel(TIME_SALES, `${kind}:${id}`);
    return closeUptoSale(services, book, "metered", sale, settled, used, fields, {
      class: sale.cls,
      network: sale.requirements.network,
      minutes: Number(used.minutes),
    });
  }
}

/** Stop rows, by name, and the kind of what they stop. */
export const STOP_ROWS: Readonly<Record<string, "session" | "sandbox">> = {
  "sandbox.stop": "sandbox",
  "session.stop": "session",
  "x402.session.stop": "session",
};

/**
 * In front of a stop row: once the stop answered 2xx, the stopped resource's metered sale (if any) is settled for the
 * time used, and the stop's answer carries the receipt (PAYMENT-RESPONSE) and `x-tollgate-sale: charged`.
 */
export function meteredStopStep(metered: MeteredSales, kind: "session" | "sandbox"): MiddlewareHandler<GatewayEnv> {
  return async function settleAtStop(c: Context<GatewayEnv>, next) {
    await next();
    const res = c.res;
    if (res.status < 200 || res.status >= 300) return;
    const id = c.req.param("id");
    if (!id) return;
    const settled = await metered.settle(kind, id, "stop");
    if (!settled) return;
    const headers = new Headers(res.headers);
    headers.set("payment-response", encodePaymentResponseHeader(settled));
    // Not settled yet (the facilitator could not be asked): the sweep settles it for the minutes to this stop.
    const pending = settled.errorReason === "facilitator_unavailable";
    headers.set("x-tollgate-sale", settled.success ? "charged" : pending ? "pending" : "not-charged");
    headers.set("access-control-expose-headers", "payment-response, x-tollgate-sale");
    c.res = undefined as unknown as Response;
    c.res = new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  };
}
