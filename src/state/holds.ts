// When a ledger hold (a reserved or uncertain entry) can be settled by a reconciler, and which entries a list filter keeps.
import type { HoldGrowth, LedgerEntry, LedgerFilter, LedgerState } from "./types.js";

/** An entry reserved but never signed is stale after this long: the instance that held it crashed or gave up. */
export const UNSIGNED_HOLD_MS = 10 * 60 * 1000;

/** States whose amount is held pending an outcome. */
export const HELD: ReadonlySet<LedgerState> = new Set<LedgerState>(["reserved", "uncertain"]);

/** Epoch ms after which the authorization behind the entry can no longer be settled (or was never signed). */
export function holdExpiresAt(e: Pick<LedgerEntry, "validBefore" | "createdAt">): number {
  return e.validBefore !== undefined ? e.validBefore * 1000 : e.createdAt + UNSIGNED_HOLD_MS;
}

/**
 * What a hold becomes when it grows by `by`: its new amount, the change actually counted (a give-back never takes it
 * below zero), and its new validBefore (unix seconds).
 * @throws RangeError for seconds that are not a whole number.
 */
export function grown(
  e: Pick<LedgerEntry, "amount" | "validBefore" | "createdAt">,
  by: HoldGrowth,
): { amount: bigint; delta: bigint; validBefore: number } {
  if (!Number.isSafeInteger(by.seconds)) throw new RangeError(`seconds must be a whole number, got ${by.seconds}`);
  const reserved = BigInt(e.amount);
  const delta = by.amount < -reserved ? -reserved : by.amount;
  const end = e.validBefore ?? Math.floor(holdExpiresAt(e) / 1000);
  return { amount: reserved + delta, delta, validBefore: end + by.seconds };
}

/** Whether an entry passes a list filter (its limit aside). Entries without a kind are x402. */
export function matches(e: LedgerEntry, f: LedgerFilter): boolean {
  if (f.tenant !== undefined && e.tenant !== f.tenant) return false;
  if (f.state !== undefined && e.state !== f.state) return false;
  if (f.kind !== undefined && (e.kind ?? "x402") !== f.kind) return false;
  if (f.resource !== undefined && e.resource !== f.resource) return false;
  return true;
}
