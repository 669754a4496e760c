// Metered sales with x402 `upto` (Permit2): the buyer signs a maximum, the gateway settles what was used, up to it —
// zero allowed, then nothing moves on chain. Sessions and sandboxes priced with `scheme = "upto"` are sold by time:
// the purchase signs the whole window (`minutes` × the per-minute price), the creation settles nothing, and the sale is
// settled once, for the minutes used (rounded up, at least one; never below the floor), when the resource is stopped
// through the gateway or its window ends. A creation the upstream refused settles nothing. Kept in the shared key-value
// store (the signed payload until it settles), so a stop on any instance settles it.
import { encodePaymentResponseHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { Context, MiddlewareHandler } from "hono";
import type { SaleClass, SalesConfig } from "../../config/sales-schema.js";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { SalesBook } from "./book.js";

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
}

/** Processes' timers for the windows' ends (a stop settles sooner; a restart leaves the sale to a later stop read). */
export class MeteredSales {
  private readonly timers = new Map<string, ReturnType<typeof setTimeout>>();
  constructor(private readonly parts: MeteredParts) {}

  /** Keeps `sale` until it ends, and settles it at the end of its window if nothing stopped it before. */
  async open(sale: PendingSale): Promise<void> {
    const { services } = this.parts;
    const windowMs = sale.minutes * 60_000;
    await services.stores.kv.set(pendingKey(sale.kind, sale.id), JSON.stringify(sale), windowMs + KEEP_PAST_MS);
    const t = setTimeout(() => {
      this.timers.delete(`${sale.kind}:${sale.id}`);
      void this.settle(sale.kind, sale.id, "window_end").catch(() => {});
    }, windowMs);
    (t as { unref?: () => void }).unref?.();
    this.timers.set(`${sale.kind}:${sale.id}`, t);
  }

  /**
   * Settles the pending sale of `kind` `id` (once across the fleet) for the time used: the receipt, or undefined when
   * there was none (not a metered sale, or settled already).
   */
  async settle(kind: "session" | "sandbox", id: string, reason: "stop" | "window_end"): Promise<SettleResponse | undefined> {
    const { services, facilitator, book } = this.parts;
    const raw = await services.stores.kv.get(pendingKey(kind, id));
    if (!raw) return undefined;
    const sale = JSON.parse(raw) as PendingSale;
    if (!(await services.stores.kv.setIfAbsent(claimKey(kind, id), "1", sale.minutes * 60_000 + KEEP_PAST_MS))) return undefined;
    const timer = this.timers.get(`${kind}:${id}`);
    if (timer) clearTimeout(timer);
    this.timers.delete(`${kind}:${id}`);
    const used = meteredAmount(sale, services.now() - sale.startedAt);
    let settled: SettleResponse;
    try {
      settled = await facilitator.settle(sale.payload, { ...sale.requirements, amount: used.units.toString() });
    } catch (err) {
      settled = {
        success: false,
        errorReason: "facilitator_unavailable",
        errorMessage: String((err as Error)?.message ?? err),
        transaction: "",
        network: sale.requirements.network,
      } as SettleResponse;
    }
    await services.stores.kv.delete(pendingKey(kind, id));
    const fields = { tenant: sale.tenant, row: sale.row, id, reason, minutes: Number(used.minutes), amount: used.units.toString() };
    if (!settled.success) {
      services.logger.error("metered sale not settled", { ...fields, error: settled.errorReason });
      return settled;
    }
    services.logger.info("metered sale settled", { ...fields, transaction: settled.transaction });
    if (used.units > 0n)
      await book.record({
        at: services.now(),
        tenant: sale.tenant,
        payer: settled.payer ?? sale.payer,
        payTo: sale.payTo,
        row: sale.row,
        class: sale.cls,
        network: sale.requirements.network,
        asset: sale.requirements.asset,
        amount: settled.amount ?? used.units.toString(),
        priceMicroUsd: used.microUsd.toString(),
        transaction: settled.transaction,
        requestId: sale.requestId,
        paymentId: sale.paymentId,
        scheme: "upto",
        minutes: Number(used.minutes),
      });
    return settled;
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
    headers.set("x-tollgate-sale", settled.success ? "charged" : "not-charged");
    headers.set("access-control-expose-headers", "payment-response, x-tollgate-sale");
    c.res = undefined as unknown as Response;
    c.res = new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  };
}
