// Creation answers: what a create call (sandbox, session, credit-billed job) names: `id`, or `jobId` for jobs, the job's
// status, and when a paid session ends. The answer is read once per request: the handler that reads it notes what it
// named on the context (noteCreated), and the chain's quota and meter steps take it from there (createdBy). What a
// creation makes becomes the caller's here and nowhere else (claimCreated).
import type { Context } from "hono";
import * as z from "zod";
import { GatewayError } from "../errors.js";
import { lenient, readWire } from "../upstream/records.js";
import type { GatewayServices } from "../services.js";
import type { ResourceKind } from "../state/types.js";

const CreatedAnswer = z.looseObject({
  id: lenient(z.union([z.string(), z.number()])),
  jobId: lenient(z.union([z.string(), z.number()])),
  status: lenient(z.string()),
  /** Volumes are addressed by name too. */
  name: lenient(z.string()),
  expiresAt: lenient(z.string()),
});

/**
 * A creation the quota step counts where it is claimed (middleware/quota): the claim is refused ("full") when the
 * tenant already has `limit` active resources of the kind, in the claim's own state step.
 */
interface QuotaClaim {
  kind: ResourceKind;
  limit: number;
  /** Re-checks the tenant's counted resources upstream (some may have ended unseen) before a full claim is refused. */
  recheck(): Promise<void>;
  /** The tenant's active count, as the claim answered it. */
  learned(active: number): void;
  /** The refusal of a claim still full after the re-check; the created resource is stopped upstream behind it. */
  refuse(id: string, active: number): Error;
}

/**
 * State work a step before the handler asks to go beside the creation's claim (the credit meter's hold attached to
 * what was created and kept under its id): started with the claim, so the creation waits for one round trip for all.
 * Called for every claim of the request; it does its work only for the kind it pays for.
 */
/**
 * A step's ask to do its writes beside the claim: told the resource as the claim starts (a promise's resolve, so the
 * step's own call, still running, learns the moment and starts its writes in the same round trip, and awaits them).
 */
type BesideClaim = (at: { kind: ResourceKind; id: string }) => void;

/** What a creation's answer named, read once per request and shared by the chain's later steps (quota, meter). */
export interface Created {
  /** The created resource's id (`jobId`, else `id`), when the answer names one. */
  id?: string;
  /** When a paid (x402) session ends. */
  expiresAt?: string;
}

declare module "hono" {
  interface ContextVariableMap {
    /** Set by the handler that read the creation's answer (noteCreated), or by the first step to ask (createdBy). */
    created: Created;
    /** The resource claimed for the caller in this request (`kind:id`), set by claimCreated. */
    claimed: string;
    /** Set by the quota step on a creation it counts at the claim (QuotaClaim). */
    quotaClaim: QuotaClaim;
    /** Work to start beside the claim (besideClaim), in the order the steps asked. */
    besideClaim: BesideClaim[];
  }
}

/** Asks for `work` to start beside this request's creation claim (claimCreated), in the same round trip. */
export function besideClaim(c: Context, work: BesideClaim): void {
  const list = c.get("besideClaim");
  if (list) list.push(work);
  else c.set("besideClaim", [work]);
}

/** Notes what a creation answer, already parsed, names (the handler read it): the chain reads it from here, not again. */
export function noteCreated(c: Context, answer: unknown): Created {
  const a = readWire(CreatedAnswer, answer);
  const id = a.jobId ?? a.id;
  const created: Created = { id: typeof id === "string" || typeof id === "number" ? String(id) : undefined, expiresAt: a.expiresAt };
  c.set("created", created);
  return created;
}

/**
 * What the request's creation answer named: as its handler noted it, else (a handler that relayed the answer as it
 * came) read from the answer here, once, and kept for the next step to ask.
 */
export async function createdBy(c: Context): Promise<Created> {
  const known = c.get("created");
  if (known) return known;
  let answer: unknown;
  try {
    answer = await c.res.clone().json();
  } catch {
    answer = undefined;
  }
  return noteCreated(c, answer);
}

/** A creation whose answer names a resource another tenant owns: nothing is handed over. */
const claimRefused = (kind: string) =>
  new GatewayError(409, "resource_conflict", `The upstream answered with a ${kind} this tenant cannot claim; nothing was handed over.`);

/**
 * The one place a created resource becomes a tenant's: the first claim wins, so an upstream answering a creation with
 * something another tenant owns moves nothing (409 resource_conflict). Noted on the context, so the chain's quota step
 * (which makes sure what it counted is claimed) does not claim it again.
 * @example await claimCreated(services, c, { kind: "sandbox", id: "sb_1", tenant: "acme", route: row.name })
 */
export async function claimCreated(
  services: Pick<GatewayServices, "stores" | "logger"> & Partial<Pick<GatewayServices, "upstream">>,
  c: Context,
  r: { kind: ResourceKind; id: string; tenant: string; route?: string },
): Promise<void> {
  // With several upstream accounts: the custody record (so every later call for the id goes to its account) and the
  // fleet's count of the account's live resources, beside the claim; so is what the chain's steps asked for (the
  // credit meter's kept hold): one state round trip for all.
  const accounts = services.upstream?.accounts?.configured ? services.upstream.accounts : undefined;
  const account = accounts && (c.get("upstreamAccount") ?? accounts.defaultId);
  const quota = c.get("quotaClaim");
  for (const claiming of c.get("besideClaim") ?? []) claiming({ kind: r.kind, id: r.id });
  const [claimed, existed] = await Promise.all([
    quota?.kind === r.kind ? claimCounted(services, r, quota) : services.stores.ownership.claim(r.kind, r.id, r.tenant),
    accounts && account !== undefined ? accounts.rememberCreated(r.kind, r.id, account, c.get("accountHold")) : false,
  ]);
  if (!claimed) throw claimRefused(r.kind);
  // A record already there (this tenant's id made again): rewritten now that the claim won.
  if (existed && accounts && account !== undefined) await accounts.remember(r.kind, r.id, account);
  c.set("claimed", `${r.kind}:${r.id}`);
  services.logger.info(`${r.kind}.created`, { tenant: r.tenant, id: r.id, ...(r.route ? { route: r.route } : {}) });
}

/**
 * The claim with the tenant's quota counted in it (one state step): a full one is tried once more after the re-check
 * (resources that ended unseen free their slots), then refused.
 */
async function claimCounted(
  services: Pick<GatewayServices, "stores">,
  r: { kind: ResourceKind; id: string; tenant: string },
  quota: QuotaClaim,
): Promise<boolean> {
  const { ownership } = services.stores;
  let answer = await ownership.claimWithin(r.kind, r.id, r.tenant, quota.limit);
  if (answer.outcome === "full") {
    await quota.recheck();
    answer = await ownership.claimWithin(r.kind, r.id, r.tenant, quota.limit);
  }
  quota.learned(answer.active);
  if (answer.outcome === "full") throw quota.refuse(r.id, answer.active);
  return answer.outcome === "claimed";
}

/** True when this request's creation of `kind` `id` was claimed already (by the handler, with claimCreated). */
export const claimedHere = (c: Context, kind: ResourceKind, id: string): boolean => c.get("claimed") === `${kind}:${id}`;
