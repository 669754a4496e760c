// Tollgate's own short-lived, scoped tokens (HS256 JWTs): what clients hold instead of upstream credentials.
import { SignJWT, jwtVerify, errors as joseErrors, type JWTPayload } from "jose";
import { LRUCache } from "lru-cache";
import { GatewayError } from "../errors.js";
import type { KeyValueStore } from "../state/types.js";
import { stateKeys } from "../state/keys.js";
import type { AgentPolicy } from "../../config/tenant-schema.js";

/**
 * What a token may be used for. Sandbox: runtime, terminal, ports; session: cdp, computer, live (the live view ticket);
 * search: search; mcp: the tenant scopes it may act in (search, jobs, agents, sessions, sandboxes).
 */
export type TokenScope = "runtime" | "terminal" | "ports" | "cdp" | "computer" | "live" | "search" | McpScope;
/** The tenant scopes a keyless MCP token may carry (never admin). */
export const MCP_SCOPES = ["search", "jobs", "agents", "sessions", "sandboxes"] as const;
export type McpScope = (typeof MCP_SCOPES)[number];
type TokenKind = "sandbox" | "session" | "search" | "mcp";

export interface GatewayToken {
  tenant: string;
  kind: TokenKind;
  /** Sandbox or session id the token is bound to (none for search and MCP tokens). */
  resource?: string;
  scopes: TokenScope[];
  /** Spend cap in atomic units for search and MCP tokens. */
  cap?: bigint;
  jti: string;
  /** Epoch seconds. */
  exp: number;
  /** Epoch seconds it was minted at. */
  iat: number;
  /**
   * Epoch ms it was minted at (the `ims` claim): a tenant-wide revocation revokes every token minted up to a moment,
   * and one minted later in the same second lives (with `iat` alone it was refused for its whole life).
   */
  iatMs?: number;
  /** Minted by a tenant for an untrusted client (as opposed to handed out in a rewritten response). */
  keyless?: boolean;
  /**
   * What the agent holding it may do, within its tenant's and the operator's policies (never wider: every layer
   * applies; src/agent-policy/engine.ts). Carried signed, as the `pol` claim.
   */
  policy?: AgentPolicy;
  /**
   * The OAuth grant (src/oauth/) this token belongs to: its cap is the grant's (counted under the grant's id, shared by
   * every token the grant's refreshes mint) and revoking the grant revokes it.
   */
  grant?: string;
  /** The window a grant's cap counts in ("total" when absent). */
  capWindow?: "daily" | "monthly" | "total";
  /** The resource (RFC 8707) an OAuth access token was issued for: the gateway's `/mcp` URL or its origin. */
  aud?: string;
  /** The MCP tools an OAuth grant allows (within its scopes); absent: every tool of its scopes. */
  tools?: string[];
  /**
   * The id (keyIdOf) of the tenant key this token derives from: it is refused once its tenant no longer holds that key
   * (./lineage.ts). Absent: it derives from no key (a person's grant, a response's token).
   */
  parentKey?: string;
  /**
   * The ids (jti) of the gateway tokens this one derives from, oldest first (the `pt` claim): a token minted for a
   * caller that is itself a gateway token (a capped token creating a sandbox, reading a session's wsEndpoint) is
   * refused once any of them is revoked (readRevoked), and never outlives the one it was minted for (mint's notAfter).
   */
  parentTokens?: string[];
  /**
   * Epoch seconds its parents expire (the `pe` claim: the gateway token it was minted for, whose own expiry caps it in
   * turn). An open connection admitted with it may outlive the token's own expiry (the SDK cannot refresh an open
   * socket), never this one (stillValid).
   */
  parentsExpire?: number;
}

const ISSUER = "tollgate";

const importSecret = (secret: string) =>
  crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);

/** One signing secret and the id (`kid`) tokens signed with it carry. */
export interface TokenSecret {
  kid: string;
  secret: string;
}

/** The id a lone TOLLGATE_TOKEN_SECRET signs under (so it can be listed, retired, in TOLLGATE_TOKEN_SECRETS later). */
const DEFAULT_KID = "default";

/**
 * Mints and verifies gateway tokens. Several secrets may be held at once: the first signs (its id in the token's `kid`
 * header), the others only verify, so a rotated-out secret keeps its outstanding tokens valid until it is removed.
 */
/** How often an instance rereads the fleet's revocation count (how late another instance's revocation can apply). */
const REVOCATION_POLL_MS = 250;
const REVOCATION_COUNT_TTL_MS = 400 * 86_400_000;

export class TokenService {
  /** HMAC keys by kid, imported once (jose would import raw bytes again on every call). The first one signs. */
  private keys: Map<string, Promise<CryptoKey>>;
  private signer: string;
  /** Kids of replaced secrets that still verify, until when (epoch ms): see replaceSecrets. */
  private retiring = new Map<string, number>();
  /** Signatures already checked, by token: the hot path then costs a map lookup (expiry and revocation still checked). */
  private readonly verified = new LRUCache<string, GatewayToken>({ max: 10_000 });
  /** Token ids found not revoked since the fleet's revocation count was last seen to change. */
  private readonly notRevoked = new LRUCache<string, true>({ max: 10_000 });
  /** The fleet's revocation count as last read, and when. */
  private revocations: { count: string | undefined; readAt: number } | undefined;
  /** When a reread started behind a call is under way (0: none). */
  private refreshingSince = 0;
  /** When this instance last revoked something (a reread begun before it must not restore the old count). */
  private revokedAt = 0;

  constructor(
    secrets: string | readonly TokenSecret[],
    private readonly kv: KeyValueStore,
    private readonly now: () => number = Date.now,
    /** Told the kind of every token minted (the tokens-minted counter). */
    private readonly onMint?: (kind: string) => void,
  ) {
    const list = typeof secrets === "string" ? [{ kid: DEFAULT_KID, secret: secrets }] : secrets;
    if (list.length === 0) throw new TypeError("TokenService needs at least one secret");
    this.keys = new Map(list.map(({ kid, secret }) => [kid, importSecret(secret)]));
    this.signer = list[0]!.kid;
  }

  /**
   * New secrets (their file changed): the first signs from now on; a kid held before and not in `list` still verifies
   * the tokens it signed for `graceMs` more (0: they stop at once), then is dropped.
   */
  replaceSecrets(list: readonly TokenSecret[], graceMs: number): void {
    if (list.length === 0) throw new TypeError("TokenService needs at least one secret");
    const until = this.now() + graceMs;
    const keys = new Map(list.map(({ kid, secret }) => [kid, importSecret(secret)]));
    for (const [kid, key] of this.keys) {
      if (keys.has(kid)) this.retiring.delete(kid);
      else if (graceMs > 0) {
        keys.set(kid, key);
        this.retiring.set(kid, Math.min(until, this.retiring.get(kid) ?? until));
      } else this.retiring.delete(kid);
    }
    this.keys = keys;
    this.signer = list[0]!.kid;
    this.verified.clear(); // a token checked with a dropped key must be checked again
  }

  /** Drops the replaced secrets whose grace is over (checked as tokens are verified: no timer, as on Workers). */
  private retire(): void {
    if (!this.retiring.size) return;
    const now = this.now();
    let dropped = false;
    for (const [kid, until] of this.retiring) {
      if (until > now) continue;
      this.retiring.delete(kid);
      this.keys.delete(kid);
      dropped = true;
    }
    if (dropped) this.verified.clear();
  }

  /**
   * The key a token names in its `kid`. A token without one was minted before rotation existed, by the lone
   * TOLLGATE_TOKEN_SECRET: the "default" key. An unknown kid (a removed secret) verifies with none.
   */
  private keyFor = (header: { kid?: string }): Promise<CryptoKey> => {
    const key = this.keys.get(header.kid ?? DEFAULT_KID);
    if (!key) throw new joseErrors.JWSSignatureVerificationFailed("no key for this token's kid");
    return key;
  };

  async mint(
    /** `notAfter`: epoch seconds the token may not outlive (its parent token's expiry): exp is the earlier of the two. */
    t: Omit<GatewayToken, "jti" | "exp" | "iat"> & { ttlSeconds: number; notAfter?: number },
  ): Promise<{ token: string; jti: string; expiresAt: string }> {
    const jti = crypto.randomUUID();
    const nowMs = this.now();
    const iat = Math.floor(nowMs / 1000);
    const exp = Math.min(iat + t.ttlSeconds, t.notAfter ?? Number.POSITIVE_INFINITY);
    const token = await new SignJWT({
      k: t.kind,
      ...(t.resource ? { r: t.resource } : {}),
      s: t.scopes,
      ...(t.cap !== undefined ? { cap: t.cap.toString() } : {}),
      ...(t.keyless ? { kl: 1 } : {}),
      ...(t.policy && Object.keys(t.policy).length ? { pol: t.policy } : {}),
      ...(t.grant ? { g: t.grant } : {}),
      ...(t.capWindow && t.capWindow !== "total" ? { cw: t.capWindow } : {}),
      ...(t.aud ? { aud: t.aud } : {}),
      ...(t.tools ? { tl: t.tools } : {}),
      ...(t.parentKey ? { pk: t.parentKey } : {}),
      ...(t.parentTokens?.length ? { pt: t.parentTokens } : {}),
      ...(t.notAfter !== undefined && Number.isFinite(t.notAfter) ? { pe: t.notAfter } : {}),
      ims: nowMs,
    })
      .setProtectedHeader({ alg: "HS256", typ: "JWT", kid: this.signer })
      .setIssuer(ISSUER)
      .setSubject(t.tenant)
      .setJti(jti)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(await this.keys.get(this.signer)!);
    this.onMint?.(t.kind);
    return { token, jti, expiresAt: new Date(exp * 1000).toISOString() };
  }

  /**
   * Verifies signature, expiry and revocation; throws 401 with a code that says which. `fresh`: revocation read from
   * the shared store now, not from the last second's entries (the periodic check of open sockets).
   */
  async verify(token: string | undefined, opts: { fresh?: boolean } = {}): Promise<GatewayToken> {
    if (!token) throw new GatewayError(401, "token_missing", "Missing gateway token. Send `Authorization: Bearer <token>` or `?token=`.");
    this.retire();
    let t = this.verified.get(token);
    if (!t) {
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, this.keyFor, { issuer: ISSUER, algorithms: ["HS256"], currentDate: new Date(this.now()) }));
      } catch (err) {
        if (err instanceof joseErrors.JWTExpired) throw expired();
        throw new GatewayError(401, "token_invalid", "Invalid gateway token.");
      }
      t = fromPayload(payload);
      this.verified.set(token, t);
    }
    if (t.exp * 1000 <= this.now()) throw expired();
    if (await this.isRevoked(t, opts.fresh)) throw new GatewayError(401, "token_revoked", "This gateway token has been revoked.");
    return t;
  }

  /**
   * The same answer without waiting, for a token verified lately and found not revoked since the fleet's revocation
   * count was last read; undefined when it takes a wait (a signature to check, the count or the store to read): then
   * `verify`. Its refusals (missing, expired) are verify's. `verifyNow(t) ?? (await verify(t))`.
   */
  verifyNow(token: string | undefined): GatewayToken | undefined {
    if (!token) throw new GatewayError(401, "token_missing", "Missing gateway token. Send `Authorization: Bearer <token>` or `?token=`.");
    this.retire();
    const t = this.verified.get(token);
    if (!t) return undefined;
    const now = this.now();
    if (t.exp * 1000 <= now) throw expired();
    const r = this.revocations;
    if (!r || now - r.readAt >= REVOCATION_POLL_MS || now < r.readAt || !this.notRevoked.has(t.jti)) return undefined;
    this.refreshAhead(now);
    return t;
  }

  /**
   * Revoked by its id, or with every token of its tenant (the kill switch). A token found not revoked is trusted
   * without asking the store again while the fleet's revocation count (bumped by every revocation, read at most every
   * REVOCATION_POLL_MS) is unchanged: a runtime call costs no state read, and a revocation on another instance applies
   * here within that interval (at once on the instance that made it).
   */
  private async isRevoked(t: GatewayToken, readNow = false): Promise<boolean> {
    const now = this.now();
    if (readNow) {
      // An open socket's periodic check: the store itself, so a revocation anywhere closes it within its period.
      return this.readRevoked(t);
    }
    if (!this.revocations || now - this.revocations.readAt >= REVOCATION_POLL_MS || now < this.revocations.readAt) {
      await this.readCount(now);
    } else this.refreshAhead(now);
    if (this.notRevoked.has(t.jti)) return false;
    const revoked = await this.readRevoked(t);
    if (!revoked) this.notRevoked.set(t.jti, true);
    return revoked;
  }

  private async readCount(now: number): Promise<void> {
    const count = await this.kv.get(stateKeys.revocations);
    // A revocation made here meanwhile forgot the count: the one read before it must not come back.
    if (this.revocations === undefined && this.revokedAt > now) return;
    if (this.revocations?.count !== count) this.notRevoked.clear();
    this.revocations = { count, readAt: now };
  }

  /**
   * Past half its interval, the count is reread behind the call that noticed it (not awaited): under steady traffic a
   * runtime call then never waits for the store, and the count is still never older than REVOCATION_POLL_MS when used.
   */
  private refreshAhead(now: number): void {
    const r = this.revocations;
    if (!r || now - r.readAt < REVOCATION_POLL_MS / 2 || now - this.refreshingSince < REVOCATION_POLL_MS) return;
    this.refreshingSince = now;
    this.readCount(now).then(
      () => (this.refreshingSince = 0),
      () => (this.refreshingSince = 0),
    );
  }

  /**
   * The shared store's word: the token itself, its tenant's tokens up to a moment, its OAuth grant, or a gateway token
   * it derives from (`pt`) revoked. One batch: a parent token costs no extra round trip.
   */
  private async readRevoked(t: GatewayToken): Promise<boolean> {
    const [one, all, grant, ...parents] = await Promise.all([
      this.kv.get(stateKeys.revokedToken(t.jti)),
      this.kv.get(stateKeys.revokedTenant(t.tenant)),
      t.grant ? this.kv.get(stateKeys.revokedGrant(t.grant)) : undefined,
      ...(t.parentTokens ?? []).map((jti) => this.kv.get(stateKeys.revokedToken(jti))),
    ]);
    return !!one || !!grant || parents.some((p) => !!p) || (all !== undefined && mintedMs(t) <= cutOffMs(all));
  }

  /** After a revocation is stored: tells the fleet (the count) and forgets this instance's answers. */
  private async revoked(): Promise<void> {
    await this.kv.incrBy(stateKeys.revocations, 1, REVOCATION_COUNT_TTL_MS);
    this.notRevoked.clear();
    this.revocations = undefined;
    this.revokedAt = this.now();
  }

  /** Revokes every token of a tenant minted up to now; open connections holding one close within 2 s. */
  async revokeTenant(tenant: string): Promise<void> {
    await this.kv.set(stateKeys.revokedTenant(tenant), String(this.now()), TENANT_REVOCATION_TTL_MS);
    await this.revoked();
  }

  /** Revokes every token of an OAuth grant, minted or still to be minted, for `ttlMs` (the grant's longest life). */
  async revokeGrant(grant: string, ttlMs: number): Promise<void> {
    await this.kv.set(stateKeys.revokedGrant(grant), "1", Math.max(1000, ttlMs));
    await this.revoked();
  }

  /** Revokes a token until it would have expired anyway. */
  async revoke(jti: string, exp: number): Promise<void> {
    const ttl = Math.max(1000, exp * 1000 - this.now() + 60_000);
    await this.kv.set(stateKeys.revokedToken(jti), "1", ttl);
    await this.revoked();
  }

  /**
   * Whether an open connection admitted with this token may go on: not once revoked; past expiry only for tokens
   * handed out with a resource (the SDK cannot refresh an open socket), never for keyless tokens, and never past its
   * parents' expiry (`pe`: a runtime or CDP token read with a capped token or an OAuth access token ends with it).
   */
  async stillValid(token: string | undefined): Promise<boolean> {
    try {
      await this.verify(token, { fresh: true });
      return true;
    } catch (err) {
      if (!(err instanceof GatewayError) || err.code !== "token_expired" || !token) return false;
      const t = await this.inspect(token);
      if (!t || t.keyless || (t.parentsExpire !== undefined && t.parentsExpire * 1000 <= this.now())) return false;
      return !(await this.isRevoked(t, true));
    }
  }

  /** Decodes a token this service signed, without checking expiry (to learn its jti/exp for revocation). */
  async inspect(token: string): Promise<GatewayToken | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.keyFor, { issuer: ISSUER, algorithms: ["HS256"], currentDate: new Date(0) });
      return fromPayload(payload);
    } catch {
      return undefined;
    }
  }
}

/** When a token was minted, in ms; a token without `ims` counts as minted at the end of its `iat` second. */
const mintedMs = (t: GatewayToken) => t.iatMs ?? t.iat * 1000 + 999;

/** A tenant-wide cut-off as stored: epoch ms, or (as written before) epoch seconds, then its second's end. */
function cutOffMs(stored: string): number {
  const n = Number(stored);
  return n < 1e11 ? n * 1000 + 999 : n;
}

/** Longer than any token lives (tokens.ttlSeconds is at most a day), so the revocation outlives every token it covers. */
const TENANT_REVOCATION_TTL_MS = 2 * 86_400_000;

const expired = () => new GatewayError(401, "token_expired", "This gateway token has expired; fetch the resource again for a fresh one.");

/** The claims of a token this gateway signed (verified first, so their shapes are its own). */
function fromPayload(payload: JWTPayload): GatewayToken {
  return {
    tenant: String(payload.sub),
    kind: payload.k as GatewayToken["kind"],
    resource: payload.r as string,
    scopes: Array.isArray(payload.s) ? (payload.s as TokenScope[]) : [],
    cap: payload.cap !== undefined ? BigInt(payload.cap as string) : undefined,
    jti: String(payload.jti),
    exp: Number(payload.exp),
    iat: Number(payload.iat ?? 0),
    ...(typeof payload.ims === "number" ? { iatMs: payload.ims } : {}),
    keyless: payload.kl === 1,
    ...(payload.pol && typeof payload.pol === "object" ? { policy: payload.pol as AgentPolicy } : {}),
    ...(typeof payload.g === "string" ? { grant: payload.g } : {}),
    ...(payload.g !== undefined ? { capWindow: (payload.cw as GatewayToken["capWindow"]) ?? "total" } : {}),
    ...(typeof payload.aud === "string" ? { aud: payload.aud } : {}),
    ...(Array.isArray(payload.tl) ? { tools: payload.tl as string[] } : {}),
    ...(typeof payload.pk === "string" ? { parentKey: payload.pk } : {}),
    ...(Array.isArray(payload.pt) ? { parentTokens: payload.pt.map(String) } : {}),
    ...(typeof payload.pe === "number" ? { parentsExpire: payload.pe } : {}),
  };
}

/** Gateway tokens are JWTs; tenant keys (`tg_…`) never start like one. */
export function looksLikeGatewayToken(s: string | undefined): s is string {
  return !!s && s.startsWith("eyJ");
}

/** Requires a scope on a verified token, and (for bound tokens) the resource it names. */
export function requireTokenScope(t: GatewayToken, scope: TokenScope, resource?: string): void {
  if (resource !== undefined && t.resource !== resource) throw new GatewayError(404, "not_found", "Not found");
  if (!t.scopes.includes(scope)) {
    throw new GatewayError(403, "token_scope", `This token does not allow "${scope}" (it allows: ${t.scopes.join(", ") || "nothing"}).`, {
      requiredScope: scope,
    });
  }
}
