// Presigned file URLs: the upstream URL stays server-side behind a random ticket; clients fetch the gateway URL unauthenticated.
import type { GatewayServices } from "../services.js";
import { presignedGatewayUrl } from "./rewrite.js";
import { readWire, WireRecord } from "../upstream/records.js";
import { PresignAnswer } from "./presign-wire.js";
import { stateKeys } from "../state/keys.js";

interface PresignRecord {
  url: string;
  sandboxId: string;
  method: string;
}

const FALLBACK_TTL_MS = 15 * 60 * 1000;

function newTicket(): string {
  let bin = "";
  for (const b of crypto.getRandomValues(new Uint8Array(32))) bin += String.fromCharCode(b);
  return `pst_${btoa(bin).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "")}`;
}

/**
 * Rewrites a presign-upload/-download answer: `url` becomes a gateway URL, `token` the gateway's ticket. The mapping
 * lives as long as the upstream URL does; one-time semantics stay the upstream's (a reused URL still gets its 401).
 */
export async function rewritePresign(
  services: GatewayServices,
  publicOrigin: string,
  sandboxId: string,
  answer: unknown,
): Promise<PresignAnswer> {
  const body = readWire(PresignAnswer, answer);
  if (typeof body.url !== "string") return body;
  if (!services.upstream.isAllowedUrl(body.url)) {
    const { url: _u, token: _t, ...rest } = body;
    return rest;
  }
  const now = services.now();
  const exp = typeof body.expiresAt === "number" ? body.expiresAt : Date.parse(String(body.expiresAt));
  const ttl = Number.isFinite(exp) && exp > now ? exp - now : FALLBACK_TTL_MS;
  const ticket = newTicket();
  const record: PresignRecord = { url: body.url, sandboxId, method: String(body.method ?? "GET").toUpperCase() };
  await services.stores.kv.set(stateKeys.presignTicket(ticket), JSON.stringify(record), ttl);
  return { ...body, token: ticket, url: presignedGatewayUrl(publicOrigin, sandboxId, ticket) };
}

/** The upstream URL behind a ticket, if the ticket is live and was issued for this sandbox. */
export async function presignTarget(
  services: GatewayServices,
  sandboxId: string,
  ticket: string | undefined,
): Promise<PresignRecord | undefined> {
  if (!ticket || ticket.length > 128) return undefined;
  const raw = await services.stores.kv.get(stateKeys.presignTicket(ticket));
  if (!raw) return undefined;
  const rec = JSON.parse(raw) as PresignRecord;
  return rec.sandboxId === sandboxId ? rec : undefined;
}

/**
 * A session's file link (downloads zip, recording) on the upstream's own host becomes a gateway URL behind a ticket,
 * fetched without auth like the upstream's signed link. Links to other hosts (object storage) are left as they are.
 */
export async function rewriteSessionFileUrl(
  services: GatewayServices,
  publicOrigin: string,
  sessionId: string,
  answer: unknown,
  field: string,
): Promise<WireRecord> {
  const body = readWire(WireRecord, answer);
  const url = body[field];
  if (typeof url !== "string" || !services.upstream.isAllowedUrl(url)) return body;
  const ticket = newTicket();
  const record: PresignRecord = { url, sandboxId: `session:${sessionId}`, method: "GET" };
  await services.stores.kv.set(stateKeys.presignTicket(ticket), JSON.stringify(record), FALLBACK_TTL_MS);
  return {
    ...body,
    [field]: `${publicOrigin}/_tollgate/session-files/${encodeURIComponent(sessionId)}?ticket=${encodeURIComponent(ticket)}`,
  };
}
