// One owner per tenant (docs/config-as-code.md#one-owner-per-tenant): a tenant the gateway's config file names is the
// file's, and the admin API, the console and the CLI refuse to change its settings (409 config_conflict). What stays
// allowed are the operational actions an operator needs in an incident, which narrow what the file grants and never
// fight it: disable (the kill switch) and enable again, revoke a key, issue an extra key, rotate one, bring a key's
// expiry forward. They are kept as holds beside the file's block, and laid over it again whenever the file is applied
// (at a start, at a reload), so neither undoes them.
import type { TenantConfig } from "../../config/schema.js";
import type { TenantHolds } from "../state/types.js";
import { keyIdOf } from "./tenants.js";

type Key = TenantConfig["keys"][number];

/** The settings an operator may change on a file-owned tenant; every other field is the file's. */
const OPERATIONAL = new Set(["enabled", "keys"]);

/** The file's block with the operators' holds laid over it. */
export function withHolds(file: TenantConfig, holds: TenantHolds | undefined): TenantConfig {
  if (!holds) return file;
  const revoked = new Set(holds.revoked ?? []);
  const keys: Key[] = file.keys
    .filter((k) => !revoked.has(k.hash))
    .map((k) => {
      const at = holds.expires?.[k.hash];
      return at && (!k.expiresAt || Date.parse(at) < Date.parse(k.expiresAt)) ? { ...k, expiresAt: at } : k;
    });
  const inFile = new Set(file.keys.map((k) => k.hash));
  for (const k of holds.added ?? []) if (!inFile.has(k.hash)) keys.push(k);
  return { ...file, enabled: file.enabled && !holds.disabled, keys };
}

/**
 * The holds that turn the file's block into `after`, an operator's change of `before`; or, in `refused`, the fields
 * the change would take from the file (a budget, a scope, enabling what the file disables, a later expiry for one of
 * the file's keys…).
 */
export function holdsFor(file: TenantConfig, before: TenantConfig, after: TenantConfig): { holds?: TenantHolds; refused: string[] } {
  const refused: string[] = [];
  const b = before as unknown as Record<string, unknown>;
  const a = after as unknown as Record<string, unknown>;
  for (const field of new Set([...Object.keys(b), ...Object.keys(a)])) {
    if (!OPERATIONAL.has(field) && JSON.stringify(b[field]) !== JSON.stringify(a[field])) refused.push(field);
  }
  if (after.enabled && !file.enabled && before.enabled !== after.enabled) refused.push("enabled (the file disables the tenant)");
  const holds: TenantHolds = {};
  if (!after.enabled && file.enabled) holds.disabled = true;
  const kept = new Map(after.keys.map((k) => [k.hash, k]));
  const inFile = new Set(file.keys.map((k) => k.hash));
  for (const k of file.keys) {
    const now = kept.get(k.hash);
    if (!now) (holds.revoked ??= []).push(k.hash);
    else if (now.expiresAt !== k.expiresAt) {
      const earlier = !!now.expiresAt && (!k.expiresAt || Date.parse(now.expiresAt) < Date.parse(k.expiresAt));
      if (earlier) (holds.expires ??= {})[k.hash] = now.expiresAt!;
      else if (before.keys.find((x) => x.hash === k.hash)?.expiresAt !== now.expiresAt)
        refused.push(`keys[${keyIdOf(k.hash)}].expiresAt (later than the file's)`);
    }
  }
  const added = after.keys.filter((k) => !inFile.has(k.hash));
  if (added.length) holds.added = added;
  return { ...(Object.keys(holds).length ? { holds } : {}), refused };
}
