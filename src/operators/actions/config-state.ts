// Config as code (docs/config-as-code.md): the fleet's live state in the config file's own shape — export it, compare a
// file with it (a plan), apply a file. What the file names, the file decides; what it does not name is left alone
// unless `prune` asks for it to go. Every change goes through the same path as an admin's (./tenant-changes.ts):
// audited under its actor, applied on every instance within a second, the kill switch pulled for a tenant disabled or
// deleted, the last admin key kept. A section of the file is one entry of SECTION_NAMES with its plan and apply here
// (today `tenants`; `[[upstream.accounts]]` joins the same way).
import { stringify as tomlStringify } from "smol-toml";
import * as z from "zod";
import { formatPath, semanticProblems } from "../../../config/load.js";
import type { TenantConfig } from "../../../config/schema.js";
import { tenantSchema } from "../../../config/tenant-schema.js";
import { GatewayError } from "../../errors.js";
import { keyIdOf } from "../../identity/tenants.js";
import type { GatewayServices } from "../../services.js";
import { stateKeys } from "../../state/keys.js";
import type { StoredTenant } from "../../state/types.js";
import { receiverProblems } from "../../web/destinations.js";
import type { Actor } from "./actor.js";
import { withHolds } from "../../identity/tenant-holds.js";
import { adminHorizon, audit, changeTenant, ownedRefusal, tenantView } from "./tenant-changes.js";

/** The sections of the file config as code manages; every other top-level key is static configuration (ignored here). */
const SECTION_NAMES = ["tenants"] as const;
type SectionName = (typeof SECTION_NAMES)[number];

/** A file's managed sections, validated: what the file names. */
export interface StateDocument {
  tenants: TenantConfig[];
  /** Top-level keys of the file that are not managed sections (server, upstream…): read at start, not applied. */
  ignored: string[];
}

/** One item's change: created, updated (the fields that differ), deleted (with prune), or refused (why). */
interface ItemChange {
  id: string;
  action: "create" | "update" | "delete" | "refused";
  /** For an update: the dotted paths that differ (`budget.daily`, `keys`, `keys[1a2b…].expiresAt`). */
  fields?: string[];
  reason?: string;
}

interface SectionPlan {
  changes: ItemChange[];
  unchanged: number;
  /** Live items the file does not name: left alone, or deleted with prune (then also in `changes`). */
  notInFile: string[];
}

export interface ConfigPlan {
  /** Nothing to create, update or delete, and nothing refused. */
  inSync: boolean;
  prune: boolean;
  sections: Record<SectionName, SectionPlan>;
  ignored: string[];
}

/** Validates a file's managed sections; every problem named by its path (`tenants[1].budget.daily: …`), 400 in one go. */
export function parseStateDocument(services: Pick<GatewayServices, "config">, raw: Record<string, unknown>): StateDocument {
  const problems: string[] = [];
  const tenants = raw.tenants === undefined ? [] : raw.tenants;
  const parsed = z.array(tenantSchema).safeParse(tenants, { reportInput: true });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const where = formatPath(["tenants", ...issue.path]);
      if (issue.code === "unrecognized_keys") problems.push(...issue.keys.map((k) => `${where}.${k}: unknown option`));
      else problems.push(`${where}: ${issue.message}`);
    }
  }
  problems.push(...semanticProblems({ tenants }));
  if (parsed.success) {
    parsed.data.forEach((t, i) => {
      for (const f of receiverProblems(services.config.alerts, t.alerts ?? {})) problems.push(`tenants[${i}].${f.field}: ${f.problem}`);
    });
  }
  if (problems.length || !parsed.success)
    throw new GatewayError(400, "invalid_config", `The file is invalid: ${problems.join("; ")}`, { problems });
  return { tenants: parsed.data, ignored: Object.keys(raw).filter((k) => !(SECTION_NAMES as readonly string[]).includes(k)) };
}

// --- comparing --------------------------------------------------------------------------------------------------

/** A tenant with its defaults filled and its keys in hash order, so two spellings of the same tenant compare equal. */
function canonicalTenant(t: TenantConfig): TenantConfig {
  const c = tenantSchema.parse(t);
  c.keys = [...c.keys].sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  return c;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Objects with their keys sorted and undefined dropped: JSON of equal values is equal. */
function sorted(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sorted);
  if (!isObject(v)) return v;
  return Object.fromEntries(
    Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => [k, sorted(v[k])]),
  );
}
const same = (a: unknown, b: unknown) => JSON.stringify(sorted(a)) === JSON.stringify(sorted(b));

/** The dotted paths where two values differ (objects field by field; arrays as wholes). */
function differences(a: unknown, b: unknown, at = ""): string[] {
  if (same(a, b)) return [];
  if (!isObject(a) || !isObject(b)) return [at || "(value)"];
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.flatMap((k) => differences(a[k], b[k], at ? `${at}.${k}` : k));
}

/** How two tenants differ, keys by their ids (never their hashes): `keys: +1a2b…` added, `-3c4d…` removed. */
function tenantDifferences(live: TenantConfig, file: TenantConfig): string[] {
  const { keys: liveKeys, ...liveRest } = live;
  const { keys: fileKeys, ...fileRest } = file;
  const out = differences(liveRest, fileRest);
  const byHash = new Map(liveKeys.map((k) => [k.hash, k]));
  const fileHashes = new Set(fileKeys.map((k) => k.hash));
  for (const k of fileKeys) {
    const was = byHash.get(k.hash);
    if (!was) out.push(`keys: +${keyIdOf(k.hash)}`);
    else out.push(...differences(was, k).map((f) => `keys[${keyIdOf(k.hash)}].${f}`));
  }
  for (const k of liveKeys) if (!fileHashes.has(k.hash)) out.push(`keys: -${keyIdOf(k.hash)}`);
  return out;
}

/**
 * The tenants another file owns (the gateway's own config file: its reloads decide them), and that file's name: a plan
 * made through the admin API (`tollgate diff`/`apply`) refuses to create, change or delete them.
 */
export interface FileOwned {
  ids: ReadonlySet<string>;
  file: string;
}

/**
 * The plan of the tenants section: the file's tenants against the store's records (tombstones included). `holds`: the
 * file is the gateway's own, whose blocks carry the operators' holds (src/identity/tenant-holds.ts) when applied.
 */
function planTenants(records: StoredTenant[], file: TenantConfig[], prune: boolean, owned?: FileOwned, holds = false): SectionPlan {
  const byId = new Map(records.map((r) => [r.tenant.id, r]));
  const named = new Set(file.map((t) => t.id));
  const changes: ItemChange[] = [];
  let unchanged = 0;
  for (const t of file) {
    const r = byId.get(t.id);
    if (!r) changes.push({ id: t.id, action: "create" });
    else if (r.deleted)
      changes.push({ id: t.id, action: "refused", reason: "deleted on the fleet; deleted ids are not reused (give the tenant a new id)" });
    else {
      const want = holds ? withHolds(tenantSchema.parse(t), r.holds) : t;
      const fields = tenantDifferences(canonicalTenant(r.tenant), canonicalTenant(want));
      if (fields.length && owned?.ids.has(t.id)) changes.push({ id: t.id, action: "refused", reason: ownedRefusal(t.id, owned.file) });
      else if (fields.length) changes.push({ id: t.id, action: "update", fields });
      else unchanged++;
    }
  }
  const notInFile = records.filter((r) => !r.deleted && !named.has(r.tenant.id)).map((r) => r.tenant.id);
  // Pruning leaves the gateway file's tenants alone: that file, not this one, decides whether they exist.
  if (prune) for (const id of notInFile) if (!owned?.ids.has(id)) changes.push({ id, action: "delete" });
  return { changes, unchanged, notInFile };
}

/** What applying `doc` would change on the fleet now. */
export async function planConfig(
  services: GatewayServices,
  doc: StateDocument,
  prune = false,
  owned?: FileOwned,
  holds = false,
): Promise<ConfigPlan> {
  const tenants = planTenants(await services.stores.tenants.list(), doc.tenants, prune, owned, holds);
  return {
    inSync: tenants.changes.length === 0,
    prune,
    sections: { tenants },
    ignored: doc.ignored,
  };
}

// --- applying ---------------------------------------------------------------------------------------------------

const APPLY_WAIT_MS = 5_000;
const APPLY_LOCK_MS = 60_000;

/** One apply at a time across the fleet (two instances reloading the same file at once apply it once). */
async function withApplyLock<T>(services: GatewayServices, work: () => Promise<T>): Promise<T> {
  const { kv } = services.stores;
  const deadline = Date.now() + APPLY_WAIT_MS;
  while (!(await kv.setIfAbsent(stateKeys.configApplyLock, services.instanceId, APPLY_LOCK_MS))) {
    if (Date.now() > deadline)
      throw new GatewayError(409, "change_in_progress", "Another config apply is in progress; try again in a moment.");
    await new Promise((r) => setTimeout(r, 25 + Math.random() * 50));
  }
  try {
    return await work();
  } finally {
    await kv.delete(stateKeys.configApplyLock);
  }
}

/**
 * The guards each change meets on its own (./tenant-changes.ts), checked first on the fleet as the whole apply would
 * leave it, so a file that would lock the fleet out is refused before anything is written: no live admin key left any
 * sooner than now (409 last_admin_key), or the acting admin disabled, deleted or stripped of its admin scope (409
 * admin_lockout).
 */
async function refuseLockout(services: GatewayServices, by: Actor, doc: StateDocument, plan: ConfigPlan): Promise<void> {
  const live = (await services.stores.tenants.list()).filter((r) => !r.deleted).map((r) => r.tenant);
  const deleted = new Set(plan.sections.tenants.changes.filter((c) => c.action === "delete").map((c) => c.id));
  const fromFile = new Map(doc.tenants.map((t) => [t.id, tenantSchema.parse(t)]));
  const after = [...live.filter((t) => !deleted.has(t.id) && !fromFile.has(t.id)), ...fromFile.values()];
  const now = services.now();
  if (adminHorizon(after, now) < adminHorizon(live, now))
    throw new GatewayError(409, "last_admin_key", "This file would leave the gateway without a live admin key; keep one in the file.");
  const self = by.tenant ? live.find((t) => t.id === by.tenant) : undefined;
  const selfAfter = self ? after.find((t) => t.id === self.id) : undefined;
  if (self?.scopes.includes("admin") && (!selfAfter?.enabled || !selfAfter.scopes.includes("admin")))
    throw new GatewayError(
      409,
      "admin_lockout",
      `This file would disable, delete or drop the admin scope of the acting admin "${self.id}"; apply it with another admin's key.`,
    );
}

export interface ApplyOptions {
  prune?: boolean;
  /** Tenants another file owns (the gateway's own): refused, named with that file. */
  owned?: FileOwned;
  /** Where the file came from, for the audit log ("tollgate apply", "reload of /etc/tollgate/tollgate.toml"). */
  origin?: string;
  /**
   * Keep it as the file drift is measured against (default). A reload of the gateway's own file does not: drift stays
   * measured against what the operator last applied.
   */
  remember?: boolean;
  /** The gateway's own file (a reload): the operators' holds on its tenants are laid over its blocks. */
  holds?: boolean;
}

/**
 * Applies `doc`: creates what it names and the fleet lacks, makes what both have match the file, deletes (with prune)
 * what it does not name. Refused as a whole (409 config_conflict, nothing written) when an item is refused. Each change
 * is audited like an admin's (`config.tenant.create|update|delete`), then one `config.apply` entry sums it up.
 */
export async function applyConfig(services: GatewayServices, by: Actor, doc: StateDocument, opts: ApplyOptions = {}): Promise<ConfigPlan> {
  const prune = !!opts.prune;
  return withApplyLock(services, async () => {
    const plan = await planConfig(services, doc, prune, opts.owned, opts.holds);
    const refused = plan.sections.tenants.changes.filter((c) => c.action === "refused");
    if (refused.length)
      throw new GatewayError(409, "config_conflict", refused.map((c) => `tenants ${c.id}: ${c.reason}`).join("; "), { plan });
    await refuseLockout(services, by, doc, plan);
    if (plan.inSync) {
      if (opts.remember !== false) await remember(services, by, doc, opts.origin);
      await services.tenantSync.refresh(); // this instance current too (another may just have applied the same file)
      return plan;
    }
    const fileTenant = new Map(doc.tenants.map((t) => [t.id, tenantSchema.parse(t)]));
    const { changes } = plan.sections.tenants;
    // Creations first, then updates (admin tenants in the file first), then deletions: the fleet keeps an admin key
    // throughout when the file moves the admin role from one tenant to another.
    const isAdmin = (id: string) => !!fileTenant.get(id)?.scopes.includes("admin");
    const ordered = [
      ...changes.filter((c) => c.action === "create"),
      ...changes.filter((c) => c.action === "update").sort((a, b) => Number(isAdmin(b.id)) - Number(isAdmin(a.id))),
      ...changes.filter((c) => c.action === "delete"),
    ];
    for (const change of ordered) {
      const t = fileTenant.get(change.id);
      if (change.action === "create") {
        const record: StoredTenant = { tenant: t!, source: "config", updatedAt: services.now() };
        if (!(await services.stores.tenants.create(record)))
          throw new GatewayError(409, "config_conflict", `tenants ${change.id}: created meanwhile by someone else; run the diff again.`);
        await audit(services, by, "config.tenant.create", `tenant:${change.id}`, undefined, tenantView(record));
      } else if (change.action === "update") {
        await changeTenant(services, by, change.id, { action: "config.tenant.update", source: "config" }, () => structuredClone(t!));
      } else if (change.action === "delete") {
        await changeTenant(services, by, change.id, { action: "config.tenant.delete", remove: true, source: "config" });
      }
    }
    await services.tenantSync.refresh();
    const count = (a: ItemChange["action"]) => changes.filter((c) => c.action === a).map((c) => c.id);
    await audit(services, by, "config.apply", "config", undefined, {
      ...(opts.origin ? { origin: opts.origin } : {}),
      prune,
      created: count("create"),
      updated: count("update"),
      deleted: count("delete"),
      unchanged: plan.sections.tenants.unchanged,
    });
    if (opts.remember !== false) await remember(services, by, doc, opts.origin);
    return plan;
  });
}

// --- exporting --------------------------------------------------------------------------------------------------

/** Drops undefined, empty objects and empty arrays the schema's defaults would give back, so the file stays short. */
function compact(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(compact);
  if (!isObject(v)) return v;
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const c = compact(x);
    if (c === undefined || (isObject(c) && Object.keys(c).length === 0)) continue;
    out[k] = c;
  }
  return out;
}

/** The live tenants in the config file's shape (key hashes included: the file is for admins and git, like the config). */
export async function exportState(services: GatewayServices): Promise<{ tenants: TenantConfig[] }> {
  const records = (await services.stores.tenants.list()).filter((r) => !r.deleted);
  return {
    tenants: records.map((r) => {
      // id first, keys after the plain fields: the order a person writes the file in.
      const { id, keys, ...rest } = r.tenant;
      return compact({ id, ...rest, keys }) as TenantConfig;
    }),
  };
}

/** The export as TOML, with a header saying what it is and how to use it. */
export function stateToToml(state: { tenants: TenantConfig[] }, from: string, at: number, fileOwned: string[] = []): string {
  const header = [
    `# Tollgate live state, exported ${new Date(at).toISOString()} from ${from}.`,
    "# Keep it in git; `tollgate diff FILE` shows what `tollgate apply FILE` would change (docs/config-as-code.md).",
    "# What this file names, it decides; add --prune to delete what it does not name.",
    ...(fileOwned.length
      ? [
          `# Also named in the gateway's own config file: ${fileOwned.join(", ")}. A reload of that file applies a block`,
          "# only when the file changes it; keep each tenant in one file (docs/config-as-code.md#which-side-wins).",
        ]
      : []),
    "",
  ].join("\n");
  return header + (state.tenants.length ? tomlStringify(state) : "tenants = []\n");
}

// --- drift ------------------------------------------------------------------------------------------------------

/** The last applied file is kept this long (a fleet not applied to for ten years compares with its config file). */
const LAST_APPLIED_TTL_MS = 10 * 365 * 86_400_000;

interface LastApplied {
  tenants: TenantConfig[];
  at: number;
  by: string;
  origin?: string;
}

async function remember(services: GatewayServices, by: Actor, doc: StateDocument, origin: string | undefined) {
  const last: LastApplied = {
    tenants: doc.tenants,
    at: services.now(),
    by: by.person ?? by.tenant ?? "unknown",
    ...(origin ? { origin } : {}),
  };
  await services.stores.kv.set(stateKeys.configLastApplied, JSON.stringify(last), LAST_APPLIED_TTL_MS);
}

export interface ConfigDrift extends ConfigPlan {
  /** What the fleet is compared with: the file last applied (by whom, when), else the gateway's own config file. */
  against: { kind: "last-apply"; at: string; by: string; origin?: string } | { kind: "config-file" };
}

/**
 * Drift: what an apply of the file last applied would change now (nothing pruned), i.e. the admin API and console edits
 * made since to what that file names. Before any apply, the gateway's own config file stands in for it.
 */
export async function configDrift(services: GatewayServices): Promise<ConfigDrift> {
  const raw = await services.stores.kv.get(stateKeys.configLastApplied);
  let last: LastApplied | undefined;
  try {
    last = raw ? (JSON.parse(raw) as LastApplied) : undefined;
  } catch {
    last = undefined;
  }
  const tenants = last?.tenants ?? services.tenantSync.fileTenants();
  // An operator's holds on a file-owned tenant (disabled, a key revoked…) are not drift: no apply would undo them.
  const plan = await planConfig(services, { tenants, ignored: [] }, false, undefined, true);
  const against: ConfigDrift["against"] = last
    ? { kind: "last-apply", at: new Date(last.at).toISOString(), by: last.by, ...(last.origin ? { origin: last.origin } : {}) }
    : { kind: "config-file" };
  return { ...plan, against };
}

/** The drift in a few figures, for /ready. */
export function driftSummary(plan: ConfigPlan) {
  const t = plan.sections.tenants;
  return {
    inSync: plan.inSync,
    changes: t.changes.length,
    tenants: t.changes.map((c) => `${c.action} ${c.id}`),
    notInFile: t.notInFile.length,
  };
}

/**
 * The tenants the gateway's own config file names, as an apply through the admin API must leave them (one owner per
 * tenant, docs/config-as-code.md#one-owner-per-tenant); none when it runs without a file's tenants.
 */
export function fileOwned(services: GatewayServices): FileOwned | undefined {
  const tenants = services.tenantSync.fileTenants();
  if (!tenants.length) return undefined;
  return { ids: new Set(tenants.map((t) => t.id)), file: services.tenantSync.fileName ?? "(the file the gateway was started with)" };
}
