// Callers of what no route-table row's credential header names: an exposed port's visitor (a gateway token as
// `Authorization: Bearer`, in the port cookie its bootstrap set, or as the bootstrap's `?grant=`) and a live view's
// viewer (`?ticket=`). The one caller resolver parses these too; the port relay and the live view only act on the
// answer.
import type { Context } from "hono";
import { getCookie } from "hono/cookie";
import { decodeJwt } from "jose";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { ResourceOwner } from "../state/types.js";
import { bearerToken } from "./tenants.js";
import { looksLikeGatewayToken, type GatewayToken } from "./tokens.js";
import { holdsKey, requireParentKey } from "./lineage.js";

/** The cookie an exposed port's bootstrap sets: a ports-scoped sandbox token, for browsers that cannot send a header. */
export const PORT_COOKIE = "tollgate_port";

type PortServices = Pick<GatewayServices, "tokens" | "directory" | "now">;

/** A bearer the gateway issued (to be verified and replaced) as opposed to the app's own (passed through). */
function issuedByGateway(token: string): boolean {
  try {
    return decodeJwt(token).iss === "tollgate";
  } catch {
    return false;
  }
}

/**
 * A gateway token good for sandbox `id`'s ports, minted for its owner; `notFound` is the 404 the sandbox answers to
 * anyone else.
 */
export async function portGrant(
  services: PortServices,
  token: string,
  id: string,
  owner: string,
  notFound: () => GatewayError,
): Promise<GatewayToken> {
  const t = await services.tokens.verify(token);
  if (t.kind !== "sandbox" || t.resource !== id || t.tenant !== owner) throw notFound();
  if (!t.scopes.includes("ports")) throw new GatewayError(403, "token_scope", 'This token does not allow "ports".');
  await services.directory.stale();
  const tenant = services.directory.get(t.tenant);
  if (!tenant?.enabled) throw new GatewayError(401, "tenant_disabled", "The tenant this token was minted for is disabled.");
  requireParentKey(t, tenant, services.now());
  return t;
}

/**
 * Who is visiting sandbox `id`'s exposed port: `admitted` when a gateway token good for its ports came as the bearer
 * (a bad one is refused) or in the port cookie (a stale one admits nothing: a public port keeps working, an auth port
 * answers 401 upstream); `bearerIsOurs` when the Authorization header was the gateway's (it is not passed on).
 */
export async function portVisitor(
  services: PortServices,
  c: Context<GatewayEnv>,
  id: string,
  owner: string,
  notFound: () => GatewayError,
): Promise<{ admitted: boolean; bearerIsOurs: boolean }> {
  const bearer = bearerToken(c.req.raw.headers);
  if (bearer && issuedByGateway(bearer))
    return { admitted: !!(await portGrant(services, bearer, id, owner, notFound)), bearerIsOurs: true };
  const cookie = getCookie(c, PORT_COOKIE);
  const admitted = !!cookie && !!(await portGrant(services, cookie, id, owner, notFound).catch(() => undefined));
  return { admitted, bearerIsOurs: false };
}

/** The answer to a live view ticket of a session that ended: the ticket died with it (a new session needs a new link). */
const sessionEnded = (id: string) =>
  new GatewayError(
    410,
    "session_ended",
    `Session ${id} has ended, so its live view link no longer opens; ask for a new live view link to a running session.`,
  );

/** Whether an ownership record is `tenant`'s live session: what a live view ticket needs to stand. */
export function liveFor(record: ResourceOwner | undefined, tenant: string): boolean {
  return record?.tenant === tenant && record.active;
}

const invalidTicket = () =>
  new GatewayError(401, "ticket_invalid", "This live view link is invalid or has expired; read the session again for a new liveUrl.");

/**
 * The viewer of session `id`'s live view: `?ticket=`, a live-scoped session token of the session's owner. Anyone
 * else's answers `notFound` (404), as a missing session would. The ticket dies with its session: once the session is
 * marked ended (stopped, or read closed) it answers 410 session_ended, though its owner is remembered for days. Owner
 * and liveness come from one read of the session's record (OwnershipRegistry.ownerRecord).
 */
export async function liveViewer(
  services: Pick<GatewayServices, "tokens" | "directory" | "stores" | "now">,
  c: Context<GatewayEnv>,
  id: string,
  notFound: () => GatewayError,
): Promise<{ ticket: string; tenantId: string; token: GatewayToken }> {
  const ticket = c.req.query("ticket");
  if (!looksLikeGatewayToken(ticket) || ticket.length > 4096) throw invalidTicket();
  const t = await services.tokens.verify(ticket).catch((err: unknown) => {
    if (err instanceof GatewayError && err.code === "token_revoked")
      throw new GatewayError(401, "ticket_revoked", "This live view link has been revoked.");
    throw invalidTicket();
  });
  if (t.kind !== "session" || !t.scopes.includes("live") || t.resource !== id) throw notFound();
  await services.directory.stale();
  const tenant = services.directory.get(t.tenant);
  if (!tenant?.enabled) throw new GatewayError(401, "tenant_disabled", "The tenant this live view was shared by is disabled.");
  // The credential tree: the ticket dies with the key (or the grant: verify above) the session was read with.
  if (t.parentKey !== undefined && !holdsKey(tenant, t.parentKey, services.now()))
    throw new GatewayError(401, "ticket_revoked", "This live view link has been revoked (the tenant key it was shared with is gone).");
  const record = await services.stores.ownership.ownerRecord("session", id);
  if (record?.tenant !== t.tenant) throw notFound();
  // The credential tree: the ticket dies with the session it views (an ended session's owner is kept for its retention).
  if (!record.active) throw sessionEnded(id);
  return { ticket, tenantId: t.tenant, token: t };
}

/** A key typed into the console's sign-in form (the form's one credential): its tenant, or the 401 a header would get. */
export function signInKey(services: Pick<GatewayServices, "directory">, key: string | undefined) {
  return services.directory.authenticate(key);
}
