// When a ledger hold (a reserved or uncertain entry) can be settled by a reconciler, and which entries a list filter keeps.
import type { LedgerEntry, LedgerFilter, LedgerState } from "./types.js";

/** An entry reserved but never signed is stale after this long: the instance that held it crashed or gave up. */
const UNSIGNED_HOLD_MS = 10 * 60 * 1000;

/** States whose amount is held pending an outcome. */
export const HELD: ReadonlySet<LedgerState> = new Set<LedgerState>(["reserved", "uncertain"]);

/** Epoch ms after which the authorization behind the entry can no longer be settled (or was never signed). */
export function holdExpiresAt(e: Pick<LedgerEntry, "validBefore" | "createdAt">): number {
  return e.validBefore !== undefined ? e.validBefore * 1000 : e.createdAt + UNSIGNED_HOLD_MS;
}

/** Whether an entry passes a list filter (its limit aside). Entries without a kind are x402. */
export function matches(e: LedgerEntry, f: LedgerFilter): boolean {
  if (f.tenant !== undefined && e.tenant !== f.tenant) return false;
  if (f.state !== undefined && e.state !== f.state) return false;
  if (f.kind !== undefined && (e.kind ?? "x402") !== f.kind) return false;
  if (f.resource !== undefined && e.resource !== f.resource) return false;
  return true;
}
