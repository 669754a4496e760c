// The model of the whole system: what every credential is derived from, whether it is alive, what each tenant and
// each capped credential has spent, and the secrets handed out so far. Commands (./commands.ts) act on the real
// system and on this model; after every one, `checkInvariants` holds the real system to the model.
import { expect } from "vitest";
import { usdToAtomic } from "../../src/payments/money.js";
import {
  adminCall,
  cdpCall,
  consoleOverview,
  type Cred,
  liveCall,
  consolePage,
  mcpList,
  PEOPLE,
  type Profile,
  type RealSystem,
  runtimeCall,
  TENANTS,
  usage,
  whoami,
} from "./system.js";

/**
 * Interleavings known to break today, each owned by another engineer's fix of issue 53 (named beside it). While a flag
 * is true the invariant it names accepts either outcome for the credentials it covers (and the model follows what the
 * system did); turn it off once the fix is merged, and the suite holds the fix from then on.
 */
export const KNOWN = {
  /** 53.1 credential tree: an OAuth grant (its access and refresh tokens) outlives the tenant key that consented. */
  grantOutlivesKey: false,
  /** 53.1 credential tree: a capped token a key minted (`POST /_tollgate/tokens`) outlives that key. */
  tokenOutlivesKey: false,
  /** 53.1 OAuth: parallel refreshes with one refresh token count as reuse and revoke the whole grant. */
  parallelRefreshRevokesGrant: false,
  /** 53.1 scopes on every surface: a grant's token is checked against its scopes only at /mcp, not on HTTP rows. */
  grantScopeOnlyAtMcp: false,
  /** 53.1 redaction: the request log stores the path as sent, so a credential in a path shows in its views. */
  requestLogPathUnredacted: false,
  /**
   * No owner yet (found by this suite): a tenant changed by a config apply is stored as the config file's, so a restart
   * with the older file re-seeds it: the applied budget reverts and keys made since the file vanish. While on, the
   * model does not restart an instance after an apply in the same run.
   */
  restartRevertsApply: false,
  /** 53.1 credential tree (branch tree): a sandbox's runtime token outlives the key that created the sandbox. */
  runtimeTokenOutlivesKey: false,
  /** 53.1 credential tree (branch tree): a session's CDP token (its wsEndpoint) outlives the key that created it. */
  cdpTokenOutlivesKey: false,
  /** 53.1 credential tree (branch tree): a session's live view ticket (its liveUrl) outlives the key that created it. */
  liveTicketOutlivesKey: false,
  /**
   * Found by this suite (53.1 credential tree: a live view ticket dies with its session): a stopped session's live view
   * link still opens its page (200): the ticket is checked for its owner, who is remembered for days after the stop, not
   * for a live session (src/identity/resources.ts liveViewer). The page's socket then fails upstream.
   */
  liveLinkOutlivesSession: false,
};
// TOLLGATE_MODEL_STRICT=all (or a comma list of the flags' names) holds the suite to the fixed behaviour now.
for (const name of (process.env.TOLLGATE_MODEL_STRICT ?? "").split(",").filter(Boolean))
  for (const k of Object.keys(KNOWN) as Array<keyof typeof KNOWN>) if (name === "all" || name === k) KNOWN[k] = false;

/** How long a revocation, a disabled tenant or a new key may take to reach every instance (the fleet's bound). */
export const BOUND_MS = 1_500;

export type Liveness = "alive" | "dead" | "either";

export interface KeyM {
  kind: "key";
  tenant: string;
  id: string;
  plain: string;
  /** When it died (revoked, rotated out), epoch ms. */
  diedAt?: number;
  bornAt: number;
}

export interface GrantM {
  kind: "grant";
  n: number;
  tenant: string;
  parent: KeyM;
  clientId: string;
  access: string;
  /** When the current access token was issued (a kill switch revokes tokens issued before it). */
  accessAt: number;
  refresh: string;
  scopes: string[];
  /** The MCP tools the consent chose (absent: every tool of its scopes). */
  tools?: string[];
  cap: bigint;
  spent: bigint;
  diedAt?: number;
  /** The current access token was revoked (kill switch) at this time; a refresh issues a live one. */
  accessDiedAt?: number;
  bornAt: number;
  /**
   * A person consented (through the provider), not a key: `parent` then stands for the person's right to consent for
   * the tenant (no key of the tenant's), dead from the first sign-in that no longer maps them to it.
   */
  person?: string;
}

export interface MintM {
  kind: "mint";
  tenant: string;
  parent: KeyM;
  token: string;
  jti: string;
  diedAt?: number;
  bornAt: number;
}

export interface CookieM {
  kind: "cookie";
  tenant: string;
  parent: KeyM;
  cookie: string;
  diedAt?: number;
  bornAt: number;
}

/** A sandbox or a session a key created, the credentials its answer carried, and the credit hold it keeps. */
export interface ResourceM {
  kind: "sandbox" | "session";
  n: number;
  id: string;
  tenant: string;
  parent: KeyM;
  /** A sandbox's runtime token. */
  runtime?: string;
  /** A session's wsEndpoint and liveUrl (path and query). */
  cdp?: string;
  live?: string;
  /** What was reserved at creation (price × minutes), atomic units. */
  hold: bigint;
  /** What the ledger holds for it now: the hold while it runs, what it settled to once stopped. */
  amount: bigint;
  stoppedAt?: number;
  /** Its tokens were revoked by the tenant's kill switch (disable, or its budget running out with "stop"). */
  tokensDiedAt?: number;
  bornAt: number;
  /** One object per credential (a WeakMap key of the probes' sweep). */
  probeKeys: { runtime: object; cdp: object; live: object };
}

/** A person's console session, signed in through the identity provider with the role its groups mapped to then. */
export interface PersonSessionM {
  person: string;
  role: "admin" | "readonly" | "tenant";
  tenant?: string;
  cookie: string;
  bornAt: number;
  /** A later sign-in of the person mapped another role or tenant: the session ended then. */
  endedAt?: number;
}

/**
 * A sign-in of `person` through the provider (the console's or a consent page's), its groups now mapping to `profile`:
 * the gateway records it, and what the person made under another role or tenant dies (their grants, their console
 * sessions).
 */
export function personSignedInM(m: Model, person: string, profile: Profile): void {
  const mapped = roleOf(profile);
  const now = m.now();
  for (const g of m.grants)
    if (g.person === person && g.parent.diedAt === undefined && !(mapped?.role === "tenant" && mapped.tenant === g.tenant))
      g.parent.diedAt = now;
  for (const ps of m.personSessions)
    if (ps.person === person && ps.endedAt === undefined && (ps.role !== mapped?.role || ps.tenant !== mapped?.tenant)) ps.endedAt = now;
}

/** The role an account's profile maps to ([operators.oidc.roles]): a tenant claim never makes an operator. */
export function roleOf(profile: Profile): { role: "admin" | "readonly" | "tenant"; tenant?: string } | undefined {
  if (profile === "admin" || profile === "readonly") return { role: profile };
  if (profile === "tenant-acme") return { role: "tenant", tenant: "acme" };
  if (profile === "tenant-ops") return { role: "tenant", tenant: "ops" };
  return undefined;
}

export interface TenantM {
  id: string;
  enabled: boolean;
  /** When its state last changed (disabled or enabled), for the fleet bound. */
  changedAt: number;
  daily?: bigint;
  onExhausted: "block" | "stop";
  /** Spend of successful calls, atomic units, by kind. */
  spent: { x402: bigint; credits: bigint };
  /** The budget ran out with `onExhausted = "stop"`: paid calls are refused until the window resets. */
  stopped: boolean;
}

export interface Model {
  now: () => number;
  tenants: Record<string, TenantM>;
  keys: KeyM[];
  grants: GrantM[];
  mints: MintM[];
  cookies: CookieM[];
  resources: ResourceM[];
  /** What each person's account at the provider says now, and the console sessions people signed in. */
  profiles: Record<string, Profile>;
  personSessions: PersonSessionM[];
  /** Every secret handed to a client or the gateway (keys, tokens, wallet and upstream keys, payment signatures). */
  secrets: Set<string>;
  /** What happened, step by step (printed with a failure). */
  trail: string[];
  /** How many invariant checks ran (for the figures). */
  checks: number;
  /** Violations seen while a KNOWN flag let them pass (recorded for the report). */
  known: Set<string>;
  /** A config apply happened in this run. */
  applied: boolean;
}

export function newModel(sys: RealSystem): Model {
  const now = () => Date.now();
  const tenants: Record<string, TenantM> = {};
  for (const t of TENANTS)
    tenants[t.id] = {
      id: t.id,
      enabled: true,
      changedAt: 0,
      daily: t.daily ? usdToAtomic(t.daily) : undefined,
      onExhausted: t.onExhausted ?? "block",
      spent: { x402: 0n, credits: 0n },
      stopped: false,
    };
  const keys: KeyM[] = TENANTS.map((t) => ({ kind: "key", tenant: t.id, id: "", plain: sys.configKeys[t.id]!, bornAt: 0 }));
  const secrets = new Set<string>([
    sys.secrets.upstreamApiKey!,
    sys.secrets.walletKey!,
    sys.secrets.walletKey!.slice(2),
    sys.secrets.tokenSecret!,
  ]);
  for (const k of keys) secrets.add(k.plain);
  const profiles: Record<string, Profile> = {};
  for (const p of PEOPLE) {
    sys.people?.setProfile(p, "none");
    profiles[p] = "none";
  }
  if (sys.people) secrets.add(sys.people.idp.clientSecret);
  return {
    profiles,
    personSessions: [],
    now,
    tenants,
    keys,
    grants: [],
    mints: [],
    cookies: [],
    resources: [],
    secrets,
    trail: [],
    checks: 0,
    known: new Set(),
    applied: false,
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Liveness: what the model says each credential must do.

export const keyAlive = (m: Model, k: KeyM) => k.diedAt === undefined && m.tenants[k.tenant]!.enabled;

/** A grant: dead once revoked, or its tenant disabled; its parent key's death kills it (unless KNOWN says it won't yet). */
export function grantLiveness(m: Model, g: GrantM): Liveness {
  if (g.diedAt !== undefined || !m.tenants[g.tenant]!.enabled) return "dead";
  if (g.parent.diedAt !== undefined) return KNOWN.grantOutlivesKey ? "either" : "dead";
  return "alive";
}

export function accessLiveness(m: Model, g: GrantM): Liveness {
  const l = grantLiveness(m, g);
  if (l === "alive" && g.accessDiedAt !== undefined) return "dead";
  if (l === "either" && g.accessDiedAt !== undefined) return "dead";
  return l;
}

export function mintLiveness(m: Model, t: MintM): Liveness {
  if (t.diedAt !== undefined || !m.tenants[t.tenant]!.enabled) return "dead";
  if (t.parent.diedAt !== undefined) return KNOWN.tokenOutlivesKey ? "either" : "dead";
  return "alive";
}

type ResourceFlag = "runtimeTokenOutlivesKey" | "cdpTokenOutlivesKey" | "liveTicketOutlivesKey";

/**
 * A credential a sandbox or session answer carried: dead once the resource stopped, once the kill switch revoked the
 * tenant's tokens (a disable; the tokens stay dead after an enable, as capped tokens do), and with the key that created
 * the resource (unless the KNOWN flag of that credential says it won't yet).
 */
export function resourceLiveness(m: Model, r: ResourceM, flag: ResourceFlag): Liveness {
  if (r.tokensDiedAt !== undefined || !m.tenants[r.tenant]!.enabled) return "dead";
  if (r.stoppedAt !== undefined) return flag === "liveTicketOutlivesKey" && KNOWN.liveLinkOutlivesSession ? "either" : "dead";
  if (r.parent.diedAt !== undefined) return KNOWN[flag] ? "either" : "dead";
  return "alive";
}

/** What a tenant's open and settled sandboxes and sessions hold of its budget now. */
export const resourceMoney = (m: Model, tenant: string) =>
  m.resources.filter((r) => r.tenant === tenant).reduce((a, r) => a + r.amount, 0n);

/** A console session ends with its key (the gateway already promises it) and while its tenant is disabled. */
export const cookieAlive = (m: Model, c: CookieM) => c.diedAt === undefined && keyAlive(m, c.parent);

/** When the credential's liveness last changed (its birth, its death, its parent's, its tenant's). */
function changedAt(...times: Array<number | undefined>): number {
  return Math.max(0, ...times.filter((t): t is number => t !== undefined));
}

// ---------------------------------------------------------------------------------------------------------------
// Probing the real system.

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Probes until the answer matches what the model expects, or the fleet's bound since the last change has passed.
 * `ok`: the status a live credential gets. Returns what the probe saw last.
 */
async function expectLiveness(
  m: Model,
  what: string,
  expected: Liveness,
  since: number,
  probe: () => Promise<number>,
  okStatus = 200,
): Promise<boolean> {
  for (;;) {
    const t0 = performance.now();
    const status = await probe();
    probeStats.n++;
    probeStats.ms += performance.now() - t0;
    const alive = status === okStatus;
    if (expected === "either") return alive;
    if (alive === (expected === "alive")) return alive;
    if (m.now() - since > BOUND_MS) {
      expect.fail(`${what}: expected ${expected}, got ${status} (${m.now() - since} ms after its last change)\n${trailOf(m)}`);
    }
    probeStats.retries++;
    await sleep(40);
  }
}

export const probeStats = { n: 0, ms: 0, retries: 0 };

/** What each credential was expected to be at the last check (a change sweeps every surface). */
const lastSeen = new WeakMap<object, Liveness>();
let sweep = 0;
const tokenKeys = new Map<string, object>();
/** One object per access token (a WeakMap key). */
function lastToken(g: GrantM): object {
  let o = tokenKeys.get(g.access);
  if (!o) tokenKeys.set(g.access, (o = {}));
  return o;
}

export const trailOf = (m: Model) => `steps:\n  ${m.trail.join("\n  ")}`;

/**
 * Every credential on every surface, on both instances: keys (HTTP whoami, MCP), console sessions (the console),
 * grants' access tokens (MCP, HTTP usage), capped tokens (MCP, HTTP usage). Then the rights check: whatever is alive
 * has the same rights on the admin API as its tenant's role says, and no token is an operator.
 */
export async function checkCredentials(m: Model, sys: RealSystem): Promise<void> {
  const urls = sys.gateways.map((g) => g.url);
  const jobs: Array<Promise<unknown>> = [];
  /**
   * One credential: every surface on both instances when its expected liveness changed since the last check (a
   * birth, a death, its parent's, its tenant's); otherwise one surface on one instance, in turn (the machine is
   * shared: a full sweep every step costs seconds).
   */
  const probeAll = (
    cred: object,
    what: string,
    exp: Liveness,
    since: number,
    surfaces: Array<[string, (url: string) => Promise<number>]>,
    onEither?: string,
  ) => {
    const changed = lastSeen.get(cred) !== exp;
    lastSeen.set(cred, exp);
    const turn = (sweep++ + m.checks) % (surfaces.length * urls.length);
    for (const [si, [surface, probe]] of surfaces.entries())
      for (const [ui, url] of urls.entries()) {
        if (!changed && si * urls.length + ui !== turn) continue;
        jobs.push(
          expectLiveness(m, `${what} on ${url} (${surface})`, exp, since, () => probe(url)).then((alive) => {
            if (exp === "either" && alive && onEither) m.known.add(onEither);
          }),
        );
      }
  };
  for (const k of m.keys) {
    const c: Cred = { key: k.plain };
    probeAll(
      k,
      `key ${k.tenant}/${k.id || "config"}`,
      keyAlive(m, k) ? "alive" : "dead",
      changedAt(k.bornAt, k.diedAt, m.tenants[k.tenant]!.changedAt),
      [
        ["whoami", (url) => whoami(url, c)],
        ["mcp", (url) => mcpList(url, c)],
      ],
    );
  }
  for (const ck of m.cookies) {
    const since = changedAt(ck.bornAt, ck.diedAt, ck.parent.diedAt, m.tenants[ck.tenant]!.changedAt);
    probeAll(ck, `console session of ${ck.tenant}/${ck.parent.id || "config"}`, cookieAlive(m, ck) ? "alive" : "dead", since, [
      ["console", (url) => consoleOverview(url, ck.cookie)],
    ]);
  }
  for (const g of m.grants) {
    const since = changedAt(g.bornAt, g.diedAt, g.accessDiedAt, g.parent.diedAt, m.tenants[g.tenant]!.changedAt);
    const c: Cred = { bearer: g.access };
    // Keyed by the access token: a refresh makes a new credential to sweep.
    probeAll(
      lastToken(g),
      `grant #${g.n} (${g.tenant}) access token`,
      accessLiveness(m, g),
      since,
      [
        ["mcp", (url) => mcpList(url, c)],
        ["http usage", (url) => usage(url, c)],
      ],
      "grantOutlivesKey",
    );
  }
  for (const t of m.mints) {
    const since = changedAt(t.bornAt, t.diedAt, t.parent.diedAt, m.tenants[t.tenant]!.changedAt);
    const c: Cred = { bearer: t.token };
    probeAll(
      t,
      `capped token ${t.jti} (${t.tenant})`,
      mintLiveness(m, t),
      since,
      [
        ["mcp", (url) => mcpList(url, c)],
        ["http usage", (url) => usage(url, c)],
      ],
      "tokenOutlivesKey",
    );
  }
  for (const r of m.resources) {
    const since = changedAt(r.bornAt, r.stoppedAt, r.tokensDiedAt, r.parent.diedAt, m.tenants[r.tenant]!.changedAt);
    const what = `${r.kind} #${r.n} (${r.tenant}, ${r.id})`;
    if (r.kind === "sandbox")
      probeAll(
        r.probeKeys.runtime,
        `runtime token of ${what}`,
        resourceLiveness(m, r, "runtimeTokenOutlivesKey"),
        since,
        [["runtime relay", (url) => runtimeCall(url, r.id, r.runtime!)]],
        "runtimeTokenOutlivesKey",
      );
    else {
      probeAll(
        r.probeKeys.cdp,
        `CDP wsEndpoint of ${what}`,
        resourceLiveness(m, r, "cdpTokenOutlivesKey"),
        since,
        [["cdp", (url) => cdpCall(url, r.cdp!)]],
        "cdpTokenOutlivesKey",
      );
      probeAll(
        r.probeKeys.live,
        `live view link of ${what}`,
        resourceLiveness(m, r, "liveTicketOutlivesKey"),
        since,
        [["live view", (url) => liveCall(url, r.live!)]],
        r.stoppedAt !== undefined ? "liveLinkOutlivesSession" : "liveTicketOutlivesKey",
      );
    }
  }
  await Promise.all(jobs);
  // Rights: one instance per step is enough (the state is shared); alternate by the step count.
  const url = urls[m.checks % 2]!;
  const rights: Array<Promise<void>> = [];
  // One credential of each kind in turn per step (and always the newest): the rights do not change between steps.
  const some = <T>(xs: T[]) => (xs.length <= 1 ? xs : [...new Set([xs[m.checks % xs.length]!, xs[xs.length - 1]!])]);
  for (const k of some(m.keys.filter((k) => keyAlive(m, k))))
    rights.push(
      adminCall(url, k.plain, "GET", "/tenants").then((r) =>
        expect(r.status, `admin API with ${k.tenant}'s key\n${trailOf(m)}`).toBe(k.tenant === "ops" ? 200 : 403),
      ),
    );
  for (const g of some(m.grants.filter((g) => accessLiveness(m, g) === "alive")))
    rights.push(
      fetch(`${url}/_tollgate/admin/tenants`, { headers: { authorization: `Bearer ${g.access}` } }).then(async (r) => {
        await r.body?.cancel();
        expect(r.status, `admin API with grant #${g.n} of ${g.tenant} (a grant is never an operator)\n${trailOf(m)}`).not.toBe(200);
      }),
    );
  for (const ck of some(m.cookies.filter((c) => cookieAlive(m, c)))) {
    // The console's tenant list is an operator's page: the same person gets it there iff the admin API serves them.
    rights.push(
      fetch(`${url}/_tollgate/console/tenants/acme`, { headers: { cookie: ck.cookie }, redirect: "manual" }).then(async (r) => {
        await r.body?.cancel();
        if (ck.tenant === "ops") expect(r.status, `console tenant page for ops\n${trailOf(m)}`).toBe(200);
        else if (ck.tenant !== "acme") expect(r.status, `console: ${ck.tenant} reads acme's page\n${trailOf(m)}`).not.toBe(200);
      }),
    );
  }
  // A person's console session keeps the rights its sign-in mapped (the provider's word then, as its ID token's):
  // an operator's reads another tenant's page, a tenant user's does not.
  // Until a later sign-in maps the person otherwise: then the session has ended.
  for (const ps of some(m.personSessions))
    rights.push(
      consolePage(url, ps.cookie, "/tenants/stopper").then((status) => {
        const what = `console session of ${ps.person} (${ps.role}${ps.tenant ? ` of ${ps.tenant}` : ""}${ps.endedAt ? ", ended by a later sign-in" : ""}) reads stopper's page`;
        if (ps.role === "tenant" || ps.endedAt !== undefined) expect(status, `${what}\n${trailOf(m)}`).not.toBe(200);
        else expect(status, `${what}\n${trailOf(m)}`).toBe(200);
      }),
    );
  await Promise.all(rights);
}

/** Polls `read` until it equals `want` (compared as strings) or `ms` pass; then expects equality. */
async function settles<T>(what: string, ms: number, want: () => T | Promise<T>, read: () => Promise<T>, m: Model): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const [w, r] = await Promise.all([want(), read()]);
    if (String(w) === String(r)) return;
    if (Date.now() - t0 > ms) expect.fail(`${what}: expected ${String(w)}, got ${String(r)}\n${trailOf(m)}`);
    await sleep(50);
  }
}

/**
 * Money: the ledger per tenant and kind equals the model's count of successful calls, so spend never passed a budget
 * or cap the model enforced; what the x402 entries committed equals what left the wallet on the chain; the request
 * log's spend per tenant equals the ledger's.
 */
export async function checkMoney(m: Model, sys: RealSystem): Promise<void> {
  const stores = sys.stores();
  const ledgerSum = async (tenant: string | undefined, kind: "x402" | "credits", states: string[], perCall = false) => {
    const entries = await stores.ledger.list(tenant ? { tenant } : {});
    // A capped token's or grant's cap is counted beside the tenant's entry, under `token:<id>` (no money of its own).
    return entries
      .filter((e) => e.kind === kind && states.includes(e.state) && !e.tenant.startsWith("token:"))
      .filter((e) => !perCall || e.meter !== "minutes")
      .reduce((a, e) => a + BigInt(e.amount), 0n);
  };
  // Sandboxes and sessions: each holds price × minutes while it runs, and settles at stop to what the upstream reported,
  // never above the hold. The model follows the settled figure (the emulator bills by the second) and counts it.
  for (const r of m.resources) {
    const ref = `${r.kind}:${r.id}`;
    await settles(
      `ledger entry of ${r.kind} #${r.n} (${r.stoppedAt === undefined ? "running: its hold" : "stopped: settled, at most its hold"})`,
      // A budget's kill switch stops resources behind the refusal that pulled it (src/operators/actions/money-listener.ts).
      r.stoppedAt === undefined ? 3000 : 10_000,
      () => "ok",
      async () => {
        const fresh = (await stores.ledger.list({ tenant: r.tenant })).find((x) => x.resource === ref);
        if (!fresh) return "no entry";
        const amount = BigInt(fresh.amount);
        if (r.stoppedAt === undefined) {
          if (fresh.state !== "reserved" || amount !== r.hold) return `${fresh.state} ${amount} (hold ${r.hold})`;
          r.amount = amount;
          return "ok";
        }
        if (fresh.state === "released") {
          r.amount = 0n;
          return "ok";
        }
        if (fresh.state !== "committed") return `${fresh.state} ${amount}`;
        if (amount > r.hold || amount < 0n) return `settled ${amount} above its hold ${r.hold}`;
        r.amount = amount;
        return "ok";
      },
      m,
    );
  }
  for (const t of Object.values(m.tenants)) {
    for (const kind of ["x402", "credits"] as const) {
      await settles(
        `ledger ${kind} spend of ${t.id}`,
        3000,
        () => t.spent[kind],
        () => ledgerSum(t.id, kind, ["committed"], true),
        m,
      );
    }
    if (t.daily !== undefined) {
      const counted =
        (await ledgerSum(t.id, "x402", ["committed", "reserved", "uncertain"])) +
        (await ledgerSum(t.id, "credits", ["committed", "reserved", "uncertain"]));
      // The budget may be lowered below what was spent (a config apply); what the model allowed never passed it then.
      expect(counted <= maxDaily(m, t), `${t.id} spent ${counted} over its largest daily budget\n${trailOf(m)}`).toBe(true);
    }
    await settles(
      `request log spend of ${t.id}`,
      3000,
      () => t.spent.x402 + t.spent.credits,
      async () => (await stores.requests.list(t.id, 10_000)).reduce((a, r) => a + BigInt(r.spend ?? "0"), 0n),
      m,
    );
  }
  await settles(
    "x402 ledger == chain (what left the wallet)",
    5000,
    () => ledgerSum(undefined, "x402", ["committed"]),
    async () => sys.walletFunds - (await sys.emulator.chain!.balanceOf(sys.wallet.address)),
    m,
  );
}

/** The largest daily budget the tenant had during the run (config applies change it). */
export const maxDailySeen = new WeakMap<TenantM, bigint>();
function maxDaily(_m: Model, t: TenantM): bigint {
  return maxDailySeen.get(t) ?? t.daily ?? 0n;
}

/** Log lines already scanned (each step scans the new ones). */
const scanned = new WeakMap<RealSystem, number>();

/** No secret in any log line, in the request log (tenant views), nor in the exports; `full` also reads the exports. */
export async function checkSecrets(m: Model, sys: RealSystem, full: boolean): Promise<void> {
  for (const sig of paymentSignatures(sys)) m.secrets.add(sig);
  const secrets = [...m.secrets].filter((s) => s.length >= 16);
  const from = full ? 0 : (scanned.get(sys) ?? 0);
  const lines = sys.logs.slice(from);
  scanned.set(sys, sys.logs.length);
  const leak = (where: string, text: string) => {
    for (const s of secrets) if (text.includes(s)) return `${where} shows a secret (${s.slice(0, 6)}…)`;
    return undefined;
  };
  for (const l of lines) {
    const found = leak("a log line", l);
    if (found) expect.fail(`${found}: ${l.slice(0, 300)}\n${trailOf(m)}`);
  }
  const stores = sys.stores();
  for (const t of Object.keys(m.tenants)) {
    const records = JSON.stringify(await stores.requests.list(t, 10_000));
    const found = leak(`the request log of ${t}`, records);
    if (found) {
      if (KNOWN.requestLogPathUnredacted) m.known.add("requestLogPathUnredacted");
      else expect.fail(`${found}\n${trailOf(m)}`);
    }
  }
  if (!full) return;
  const ops = m.keys.find((k) => k.tenant === "ops" && keyAlive(m, k))!;
  const url = sys.gateways[0].url;
  for (const path of [
    "/requests?format=csv",
    "/requests",
    "/ledger",
    "/audit",
    "/usage/export",
    "/config/export?format=json",
    ...Object.keys(m.tenants).map((t) => `/grants?tenant=${t}`),
  ]) {
    const r = await fetch(`${url}/_tollgate/admin${path}`, { headers: { "x-api-key": ops.plain } });
    const text = await r.text();
    expect(r.status, `admin ${path}: ${text.slice(0, 200)}`).toBe(200);
    const found = leak(`admin ${path}`, text);
    if (found) {
      if (KNOWN.requestLogPathUnredacted && path.startsWith("/requests")) m.known.add("requestLogPathUnredacted");
      else expect.fail(`${found}\n${trailOf(m)}`);
    }
  }
}

/** The payment signatures and the upstream's own bearer tokens (sandbox runtime tokens) the emulator received. */
function paymentSignatures(sys: RealSystem): string[] {
  const out: string[] = [];
  for (const r of sys.emulator.received) {
    const sig = r.headers["payment-signature"] ?? r.headers["x-payment"];
    if (sig) out.push(sig);
    const bearer = /^Bearer (.+)$/i.exec(r.headers.authorization ?? "")?.[1];
    if (bearer) out.push(bearer);
  }
  return out;
}

/** Time spent in each invariant check, summed over the process (printed after a run, for the figures). */
export const checkTimings = { credentials: 0, money: 0, secrets: 0 };

export async function checkInvariants(m: Model, sys: RealSystem): Promise<void> {
  m.checks++;
  let t = performance.now();
  const lap = (k: keyof typeof checkTimings) => {
    const now = performance.now();
    checkTimings[k] += now - t;
    t = now;
  };
  await checkCredentials(m, sys);
  lap("credentials");
  await checkMoney(m, sys);
  lap("money");
  await checkSecrets(m, sys, false);
  lap("secrets");
}
