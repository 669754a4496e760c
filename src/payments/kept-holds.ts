// Credit holds kept until what they pay for ends (a job, a sandbox, a session): written by the chain's meter step when
// the upstream accepts a creation, settled here once, at a stop, an expiry, an upstream stop or a job's end, to what
// the upstream reports (./settle.ts). Shared by the meter step, the handlers that see resources end, the kill switch
// and the console.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { Meter, PriceName } from "../routing/row.js";
import { stateKeys } from "../state/keys.js";
import { releaseCredits, type CreditHold } from "./credit-ledger.js";
import { settleEndedResource, settleFinishedJob } from "./settle.js";
import type { LedgerServices } from "./spend.js";

/** What settling a kept hold touches: the ledger, and the upstream (the usage a resource or job reports). */
export type KeptHoldServices = LedgerServices & Pick<GatewayServices, "upstream">;

/** A reservation kept until what it pays for ends (a job, a sandbox, a session). */
export interface KeptHold extends CreditHold {
  /** Price per unit or minute, atomic. */
  rate: string;
  startedAt: number;
  meter: Meter["per"];
}

export function priceOf(services: Pick<GatewayServices, "payments">, name: PriceName): bigint {
  return services.payments.amounts.creditPrices[name];
}

export async function keep(services: KeptHoldServices, kind: string, id: string, hold: KeptHold, ttlMs: number): Promise<void> {
  await services.stores.kv.set(stateKeys.creditsHold(kind, id), JSON.stringify({ ...hold, amount: hold.amount.toString() }), ttlMs);
}

/**
 * Keeps a hold under a resource id the upstream just handed out, unless a record is there already (then false, and
 * nothing written): safe to send beside the creation's claim, before it is known whose the id is.
 */
export async function keepNew(services: KeptHoldServices, kind: string, id: string, hold: KeptHold, ttlMs: number): Promise<boolean> {
  return services.stores.kv.setIfAbsent(
    stateKeys.creditsHold(kind, id),
    JSON.stringify({ ...hold, amount: hold.amount.toString() }),
    ttlMs,
  );
}

/** Drops the kept hold record of `kind` `id` (one keepNew wrote for a creation that was not handed over). */
export async function dropKept(services: KeptHoldServices, kind: string, id: string): Promise<void> {
  await services.stores.kv.delete(stateKeys.creditsHold(kind, id));
}

export async function kept(services: KeptHoldServices, kind: string, id: string): Promise<KeptHold | undefined> {
  const raw = await services.stores.kv.get(stateKeys.creditsHold(kind, id));
  if (!raw) return undefined;
  const h = JSON.parse(raw) as KeptHold & { amount: string };
  return { ...h, amount: BigInt(h.amount) };
}

/**
 * A time-metered resource ended (stop, expiry, or the upstream says it is closed): settle its hold once, to what the
 * upstream reports it used (src/payments/settle.ts). Safe to call more than once; only the first call settles.
 */
export async function settleResource(
  services: KeptHoldServices,
  kind: "sandbox" | "session",
  id: string,
  c?: Context<GatewayEnv>,
): Promise<void> {
  const hold = await kept(services, kind, id);
  if (!hold) return;
  await services.stores.kv.delete(stateKeys.creditsHold(kind, id));
  const minutes = BigInt(Math.max(1, Math.ceil((services.now() - hold.startedAt) / 60_000)));
  await settleEndedResource(services, c, hold, { kind, id, estimate: minutes * BigInt(hold.rate) });
}

/** Job statuses that mean the job ended (its reservation settles; its ownership retention starts). */
export const TERMINAL = new Set(["completed", "failed", "stopped", "cancelled", "error"]);

/** A job answer seen on its way to the client (`answer`: its body, parsed once by the handler): when it shows the job ended, its reservation is settled. */
export async function settleJobFrom(
  services: KeptHoldServices,
  id: string,
  answer: Record<string, unknown> | undefined,
  c?: Context<GatewayEnv>,
): Promise<void> {
  const status = typeof answer?.status === "string" ? answer.status : undefined;
  if (!answer || !status || !TERMINAL.has(status)) return;
  const hold = await kept(services, "job", id);
  if (!hold) return;
  await services.stores.kv.delete(stateKeys.creditsHold("job", id));
  if (status === "failed" || status === "error") {
    await releaseCredits(services, hold, `job ${status}`);
    return;
  }
  await settleFinishedJob(services, c, hold, answer);
}
