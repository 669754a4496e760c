// Pure rewriting of the upstream's session responses so that CDP, computer actions and links point at the gateway.
import { readWire } from "../upstream/records.js";
import { SessionDetail } from "./wire.js";

/** The upstream endpoints of one session, kept server-side (never shown to a client). */
export interface SessionEndpoints {
  wsEndpoint?: string;
  computerActionEndpoint?: string;
}

export interface SessionRewriteContext {
  /** Origin clients reach the gateway at, e.g. `https://gw.example.com` (no trailing slash). */
  publicOrigin: string;
  /** Gateway token (kind session, scopes cdp + computer) that replaces the upstream session token. */
  sessionToken: string;
  /** Gateway ticket (kind session, scope live) of the gateway's own live view page. */
  liveTicket: string;
}

/** `<gateway>/_tollgate/live/<id>?ticket=…`: the gateway's live view of a session (src/sessions/live.ts). */
export function gatewayLiveUrl(publicOrigin: string, sessionId: string, ticket: string): string {
  return `${publicOrigin}/_tollgate/live/${encodeURIComponent(sessionId)}?ticket=${encodeURIComponent(ticket)}`;
}

/**
 * Fields that carry upstream access, and what a list entry shows in their place: nothing that reaches the upstream, yet
 * the field keeps its type (the Python SDK's models refuse a missing or null `liveUrl`). Details get the gateway's own
 * live view in `liveUrl` and `liveDomain`; WebDriver is not relayed, so `webdriverEndpoint` is always "".
 */
const ACCESS_FIELDS = ["liveUrl", "liveDomain", "webdriverEndpoint"] as const;

/** `ws(s)://<gateway>/devtools/browser/<id>?token=<gateway token>`: what puppeteer and playwright connect to. */
export function gatewayWsEndpoint(publicOrigin: string, sessionId: string, token: string): string {
  const ws = publicOrigin.replace(/^http/, "ws");
  return `${ws}/devtools/browser/${encodeURIComponent(sessionId)}?token=${encodeURIComponent(token)}`;
}

/** `<gateway>/_tollgate/computer-action/<id>`: the SDK posts here with the tenant key (or a session token). */
export function gatewayComputerActionEndpoint(publicOrigin: string, sessionId: string): string {
  return `${publicOrigin}/_tollgate/computer-action/${encodeURIComponent(sessionId)}`;
}

function gatewaySessionUrl(publicOrigin: string, sessionId: string): string {
  return `${publicOrigin}/api/session/${encodeURIComponent(sessionId)}`;
}

/** The upstream endpoints to keep server-side, read from a detail response. */
export function sessionEndpointsOf(record: unknown): SessionEndpoints {
  const detail = readWire(SessionDetail, record);
  const str = (v: unknown) => (typeof v === "string" && v ? v : undefined);
  return { wsEndpoint: str(detail.wsEndpoint), computerActionEndpoint: str(detail.computerActionEndpoint) };
}

/** A `Session` list entry: only `sessionUrl` points anywhere. */
export function rewriteSessionSummary<T extends object>(record: T, publicOrigin: string): T & SessionDetail {
  const s = readWire(SessionDetail, record);
  const out: SessionDetail = { ...s };
  if ("sessionUrl" in s) out.sessionUrl = gatewaySessionUrl(publicOrigin, String(s.id));
  for (const f of ACCESS_FIELDS) if (typeof out[f] === "string") out[f] = "";
  return out as T & SessionDetail; // the record's own fields, kept, with the rewritten ones
}

/**
 * A `SessionDetail` as the gateway shows it: wsEndpoint, computerActionEndpoint and liveUrl on the gateway, the upstream
 * session token replaced by a gateway token, `liveDomain` the gateway's host and `webdriverEndpoint` "" when present.
 */
export function rewriteSessionDetail<T extends object>(record: T, ctx: SessionRewriteContext): T & SessionDetail {
  const detail = readWire(SessionDetail, record);
  const id = String(detail.id);
  const out = rewriteSessionSummary(detail, ctx.publicOrigin);
  if (detail.wsEndpoint) out.wsEndpoint = gatewayWsEndpoint(ctx.publicOrigin, id, ctx.sessionToken);
  if (detail.computerActionEndpoint) out.computerActionEndpoint = gatewayComputerActionEndpoint(ctx.publicOrigin, id);
  if ("token" in detail) out.token = detail.token ? ctx.sessionToken : detail.token;
  // Always present: both SDKs read it, and the Python SDK requires a string.
  out.liveUrl = gatewayLiveUrl(ctx.publicOrigin, id, ctx.liveTicket);
  if ("liveDomain" in detail) out.liveDomain = new URL(ctx.publicOrigin).host;
  return out as T & SessionDetail;
}
