// The OAuth authorization server's shared state (src/oauth/): clients, authorization codes, grants and their refresh
// tokens. Built on the KeyValueStore every backend has (memory, Redis, Durable Objects), its "exactly once" steps on
// setIfAbsent: a code is exchanged once and a refresh token rotated once across the whole fleet; a second use is seen
// as such (a replay), never as a first. Its own contract suite (test/state/contract-oauth.ts) runs on all three.
import type { KeyValueStore } from "./types.js";

/** A client the gateway knows: registered (RFC 7591) or described by its metadata document (client_id is its URL). */
export interface OAuthClient {
  clientId: string;
  clientName?: string;
  clientUri?: string;
  redirectUris: string[];
  via: "registration" | "metadata-document";
  /** Epoch ms. */
  createdAt: number;
}

/** What the tenant consented to, carried from the consent page through the code into the grant. */
interface OAuthConsent {
  tenant: string;
  clientId: string;
  clientName: string;
  /** The host of the redirect URI the consent was given for (shown in the grants list). */
  redirectHost: string;
  scopes: string[];
  /** The MCP tools allowed within the scopes; absent: all of them. */
  tools?: string[];
  /**
   * The name of the tenant's agent policy (`tenants[].agentPolicies`) chosen at consent: every token the grant mints
   * carries its rules (the `pol` claim), read anew at each refresh; absent: the tenant's and operator's policies only.
   */
  agentPolicy?: string;
  /** Spend cap, atomic units (decimal string). */
  cap: string;
  capWindow: "daily" | "monthly" | "total";
  /** The RFC 8707 resource the tokens are for. */
  resource: string;
  /** Epoch ms the grant ends. */
  expiresAt: number;
  /**
   * The id (keyIdOf) of the tenant key that consented (typed, or behind a console link): the grant and every token it
   * mints die with that key. Absent when a person consented through the identity provider (`person`).
   */
  parentKey?: string;
  /**
   * The person (`oidc:<sub>`) who consented through the identity provider, when no key did: the grant lives while the
   * provider's word on them (src/identity/persons.ts) still makes them a user of its tenant.
   */
  person?: string;
  /** What made the person's consent possible: the role their claims mapped to at that sign-in (always "tenant"). */
  personRole?: "tenant";
}

/** An authorization code's record: the consent, and what its exchange must match. */
export interface OAuthCode extends OAuthConsent {
  /** The id the grant gets at exchange (known early, so a replay of the code can revoke it). */
  grantId: string;
  redirectUri: string;
  codeChallenge: string;
}

/** A grant: a family of capped keyless tokens, each refresh rotating its refresh token. */
export interface OAuthGrant extends OAuthConsent {
  id: string;
  createdAt: number;
  /** The last issue or refresh of its tokens. */
  refreshedAt: number;
  /** How many access tokens it has minted. */
  issued: number;
  revokedAt?: number;
  revokedReason?: string;
}

/**
 * A refresh token's use: the first (rotate it), or a later one with the moment of the first (`usedAt`, epoch ms, as
 * the first caller's clock said): within the grace window a concurrent twin, after it a reuse that revokes the grant.
 */
type RefreshUse = { grantId: string; reused: false } | { grantId: string; reused: true; usedAt: number };

/** A code's exchange: its record the first time, the grant it made on any later try. */
type CodeUse = { code: OAuthCode; replayed: false } | { grantId: string; replayed: true };

const key = {
  client: (id: string) => `oauth:client:${id}`,
  code: (digest: string) => `oauth:code:${digest}`,
  codeUsed: (digest: string) => `oauth:code-used:${digest}`,
  grant: (id: string) => `oauth:grant:${id}`,
  grantCount: (tenant: string) => `oauth:grants:n:${tenant}`,
  grantSlot: (tenant: string, n: number) => `oauth:grants:${tenant}:${n}`,
  personGrantCount: (person: string) => `oauth:person-grants:n:${person}`,
  personGrantSlot: (person: string, n: number) => `oauth:person-grants:${person}:${n}`,
  refresh: (digest: string) => `oauth:rt:${digest}`,
  refreshUsed: (digest: string) => `oauth:rt-used:${digest}`,
  refreshAnswer: (digest: string) => `oauth:rt-answer:${digest}`,
  pending: (id: string) => `oauth:request:${id}`,
  counter: (name: string) => `oauth:count:${name}`,
};

/** How long a used code's marker outlives the code: a replay within it revokes the grant the code made. */
const CODE_USED_TTL_MS = 3_600_000;
/** A tenant's grants listed at most (newest first). */
const LISTED_GRANTS = 200;
/** How long a tenant's grant index outlives its newest grant (longer than any grant lives). */
const INDEX_TTL_MS = 400 * 86_400_000;

export interface OAuthStore {
  putClient(client: OAuthClient, ttlMs: number): Promise<void>;
  getClient(id: string): Promise<OAuthClient | undefined>;
  /** A pending authorization request (between the consent page and its form), by its random id. */
  putPending(id: string, value: string, ttlMs: number): Promise<void>;
  getPending(id: string): Promise<string | undefined>;
  /** Used up: a form posted twice cannot make two codes. */
  takePending(id: string): Promise<string | undefined>;
  /** Stores a code by the digest of its value. */
  putCode(digest: string, code: OAuthCode, ttlMs: number): Promise<void>;
  /** A code's record without using it (its exchange is checked before the code is used up); undefined when unknown. */
  peekCode(digest: string): Promise<OAuthCode | undefined>;
  /** Exchanges a code: its record the first time, fleet-wide; the grant id on a replay; undefined when unknown. */
  useCode(digest: string): Promise<CodeUse | undefined>;
  /** Creates or updates a grant; a new grant joins its tenant's list. */
  putGrant(grant: OAuthGrant, isNew: boolean): Promise<void>;
  getGrant(id: string): Promise<OAuthGrant | undefined>;
  /** The tenant's grants, newest first (expired ones included until forgotten). */
  listGrants(tenant: string): Promise<OAuthGrant[]>;
  /** The grants a person (`oidc:<sub>`) consented, of any tenant, newest first. */
  listPersonGrants(person: string): Promise<OAuthGrant[]>;
  /** Stores a refresh token (by digest) for a grant, live for `ttlMs`. */
  putRefresh(digest: string, grantId: string, ttlMs: number): Promise<void>;
  /**
   * Uses a refresh token at `now` (epoch ms): the first use fleet-wide is `reused: false`; every later one `reused: true`
   * with the first one's moment.
   */
  useRefresh(digest: string, now: number): Promise<RefreshUse | undefined>;
  /** The answer a refresh token's first use gave (sealed by the caller), kept `ttlMs` for its concurrent twins. */
  putRefreshAnswer(digest: string, sealed: string, ttlMs: number): Promise<void>;
  getRefreshAnswer(digest: string): Promise<string | undefined>;
  /** A refresh token's grant without using it (revocation of the token). */
  refreshGrant(digest: string): Promise<string | undefined>;
  /** Adds to a named counter (registrations per day) and returns its value. */
  count(name: string, ttlMs: number): Promise<number>;
}

/** The OAuth store over a backend's key-value store. */
export function kvOAuthStore(kv: KeyValueStore): OAuthStore {
  const json = async <T>(k: string): Promise<T | undefined> => {
    const raw = await kv.get(k);
    return raw === undefined ? undefined : (JSON.parse(raw) as T);
  };
  /** The grants an index (a counter and its numbered slots) names, newest first, at most LISTED_GRANTS. */
  const listed = async (count: string, slot: (n: number) => string): Promise<OAuthGrant[]> => {
    const raw = await kv.get(count);
    const n = raw === undefined ? 0 : Number(raw);
    const slots = Array.from({ length: Math.min(n, LISTED_GRANTS) }, (_, i) => n - i);
    const ids = await Promise.all(slots.map((i) => kv.get(slot(i))));
    const grants = await Promise.all(ids.map((id) => (id ? json<OAuthGrant>(key.grant(id)) : undefined)));
    return grants.filter((g): g is OAuthGrant => !!g);
  };
  return {
    putClient: (client, ttlMs) => kv.set(key.client(client.clientId), JSON.stringify(client), ttlMs),
    getClient: (id) => json<OAuthClient>(key.client(id)),
    putPending: (id, value, ttlMs) => kv.set(key.pending(id), value, ttlMs),
    getPending: (id) => kv.get(key.pending(id)),
    async takePending(id) {
      const raw = await kv.get(key.pending(id));
      if (raw === undefined) return undefined;
      if (!(await kv.setIfAbsent(`${key.pending(id)}:used`, "1", 3_600_000))) return undefined;
      await kv.delete(key.pending(id));
      return raw;
    },
    putCode: (digest, code, ttlMs) => kv.set(key.code(digest), JSON.stringify(code), ttlMs),
    peekCode: (digest) => json<OAuthCode>(key.code(digest)),
    async useCode(digest) {
      const code = await json<OAuthCode>(key.code(digest));
      if (!code) {
        const grantId = await kv.get(key.codeUsed(digest));
        return grantId === undefined ? undefined : { grantId, replayed: true };
      }
      if (!(await kv.setIfAbsent(key.codeUsed(digest), code.grantId, CODE_USED_TTL_MS))) return { grantId: code.grantId, replayed: true };
      await kv.delete(key.code(digest));
      return { code, replayed: false };
    },
    async putGrant(grant, isNew) {
      const ttl = Math.max(60_000, grant.expiresAt - grant.createdAt + 7 * 86_400_000);
      await kv.set(key.grant(grant.id), JSON.stringify(grant), ttl);
      if (!isNew) return;
      // A slot of its own per grant (the counter hands each one out once): concurrent grants never overwrite a list.
      const n = await kv.incrBy(key.grantCount(grant.tenant), 1, INDEX_TTL_MS);
      await kv.set(key.grantSlot(grant.tenant, n), grant.id, ttl);
      if (grant.person === undefined) return;
      const m = await kv.incrBy(key.personGrantCount(grant.person), 1, INDEX_TTL_MS);
      await kv.set(key.personGrantSlot(grant.person, m), grant.id, ttl);
    },
    getGrant: (id) => json<OAuthGrant>(key.grant(id)),
    async listGrants(tenant) {
      const grants = await listed(key.grantCount(tenant), (i) => key.grantSlot(tenant, i));
      return grants.filter((g) => g.tenant === tenant);
    },
    async listPersonGrants(person) {
      const grants = await listed(key.personGrantCount(person), (i) => key.personGrantSlot(person, i));
      return grants.filter((g) => g.person === person);
    },
    putRefresh: (digest, grantId, ttlMs) => kv.set(key.refresh(digest), `${grantId} ${Date.now() + ttlMs}`, ttlMs),
    async useRefresh(digest, now) {
      const raw = await kv.get(key.refresh(digest));
      if (raw === undefined) return undefined;
      const [grantId, until] = raw.split(" ");
      // The record stays after its use, until it would have expired: a reuse still finds the grant to revoke.
      const ttl = Math.max(1000, Number(until) - Date.now());
      if (await kv.setIfAbsent(key.refreshUsed(digest), String(now), ttl)) return { grantId: grantId!, reused: false };
      // A marker without a moment (written before the grace window existed) reads as long ago.
      const usedAt = Number((await kv.get(key.refreshUsed(digest))) ?? "0");
      return { grantId: grantId!, reused: true, usedAt: Number.isFinite(usedAt) ? usedAt : 0 };
    },
    putRefreshAnswer: (digest, sealed, ttlMs) => kv.set(key.refreshAnswer(digest), sealed, Math.max(1000, ttlMs)),
    getRefreshAnswer: (digest) => kv.get(key.refreshAnswer(digest)),
    refreshGrant: async (digest) => (await kv.get(key.refresh(digest)))?.split(" ")[0],
    count: (name, ttlMs) => kv.incrBy(key.counter(name), 1, ttlMs),
  };
}
