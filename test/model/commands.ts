// What operators and clients do, as fast-check commands: each acts on the real system (over HTTP, on the instance it
// names) and on the model, asserts what the model predicts of the answer, and then checks every invariant.
import fc from "fast-check";
import { expect } from "vitest";
import { usdToAtomic } from "../../src/payments/money.js";
import {
  accessLiveness,
  checkInvariants,
  cookieAlive,
  type GrantM,
  KNOWN,
  keyAlive,
  type KeyM,
  type Liveness,
  maxDailySeen,
  type Model,
  personSignedInM,
  type ResourceM,
  resourceMoney,
  roleOf,
  trailOf,
} from "./model.js";
import {
  adminCall,
  consent,
  consoleSignIn,
  type Cred,
  createResource,
  consolePage,
  mintToken,
  paidSearch,
  PEOPLE,
  personAdminRead,
  personConsent,
  personConsoleSignIn,
  personGrant,
  PRICE,
  type Profile,
  type RealSystem,
  RESOURCE_MINUTES,
  refresh,
  stopResource,
} from "./system.js";

type Inst = 0 | 1;

/** Time spent per kind of step, acting and then checking (printed after a run, for the figures). */
export const timings: Record<string, { n: number; actMs: number; checkMs: number }> = {};
const inst = fc.constantFrom<Inst>(0, 1);
const url = (r: RealSystem, i: Inst) => r.gateways[i].url;
const ops = (m: Model) => m.keys.find((k) => k.tenant === "ops" && keyAlive(m, k))!;
const pick = <T>(xs: T[], n: number): T | undefined => (xs.length ? xs[n % xs.length] : undefined);
const liveKeys = (m: Model, tenant?: string) => m.keys.filter((k) => keyAlive(m, k) && (!tenant || k.tenant === tenant));

abstract class Step implements fc.AsyncCommand<Model, RealSystem> {
  abstract check(m: Readonly<Model>): boolean;
  abstract act(m: Model, r: RealSystem): Promise<void>;
  abstract toString(): string;
  async run(m: Model, r: RealSystem): Promise<void> {
    m.trail.push(this.toString());
    const t0 = performance.now();
    await this.act(m, r);
    const t1 = performance.now();
    await checkInvariants(m, r);
    const name = this.toString().replace(/\(.*/, "");
    const spent = (timings[name] ??= { n: 0, actMs: 0, checkMs: 0 });
    spent.n++;
    spent.actMs += t1 - t0;
    spent.checkMs += performance.now() - t1;
  }
}

/** Every key the model holds of a tenant that is not ops's last live key (that one may not go: 409). */
const keyOf = (m: Readonly<Model>, n: number) =>
  pick(
    m.keys.filter((k) => k.diedAt === undefined),
    n,
  );

export class CreateKey extends Step {
  constructor(
    readonly tenant: string,
    readonly at: Inst,
  ) {
    super();
  }
  check = () => true;
  async act(m: Model, r: RealSystem) {
    const res = await adminCall(url(r, this.at), ops(m).plain, "POST", `/tenants/${this.tenant}/keys`, { label: "model" });
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    m.keys.push({ kind: "key", tenant: this.tenant, id: res.json.id, plain: res.json.key, bornAt: m.now() });
    m.secrets.add(res.json.key);
  }
  toString = () => `createKey(${this.tenant}, @${this.at})`;
}

/** Revokes a key, or (rotate) replaces it with a new one at once (grace 0): either way the old key dies. */
export class EndKey extends Step {
  constructor(
    readonly n: number,
    readonly how: "revoke" | "rotate",
    readonly at: Inst,
  ) {
    super();
  }
  check = (m: Readonly<Model>) => keyOf(m, this.n) !== undefined;
  async act(m: Model, r: RealSystem) {
    const k = keyOf(m, this.n)!;
    const id = k.id || (await configKeyId(m, r, k));
    const lastAdmin = k.tenant === "ops" && m.keys.filter((x) => x.tenant === "ops" && x.diedAt === undefined).length === 1;
    const caller =
      lastAdmin || k.tenant !== "ops" ? ops(m) : (m.keys.find((x) => x.tenant === "ops" && x !== k && keyAlive(m, x)) ?? ops(m));
    const res =
      this.how === "revoke"
        ? await adminCall(url(r, this.at), caller.plain, "DELETE", `/tenants/${k.tenant}/keys/${id}`)
        : await adminCall(url(r, this.at), caller.plain, "POST", `/tenants/${k.tenant}/keys/${id}/rotate`, { graceSeconds: 0 });
    if (lastAdmin && this.how === "revoke") {
      expect(res.status, JSON.stringify(res.json)).toBe(409);
      return;
    }
    expect(res.status, JSON.stringify(res.json)).toBe(this.how === "revoke" ? 200 : 201);
    k.diedAt = m.now();
    if (this.how === "rotate") {
      m.keys.push({ kind: "key", tenant: k.tenant, id: res.json.id, plain: res.json.key, bornAt: m.now() });
      m.secrets.add(res.json.key);
    }
  }
  toString = () => `${this.how}Key(#${this.n}, @${this.at})`;
}

/** A config key's id, as the admin API names it (the model holds only its plain text). */
async function configKeyId(m: Model, r: RealSystem, k: KeyM): Promise<string> {
  const res = await adminCall(url(r, 0), ops(m).plain, "GET", `/tenants/${k.tenant}`);
  const ids = (res.json.keys as Array<{ id: string }>).map((x) => x.id);
  const known = new Set(m.keys.map((x) => x.id));
  const id = ids.find((x) => !known.has(x));
  if (!id) throw new Error(`config key of ${k.tenant} not found in ${JSON.stringify(res.json)}`);
  k.id = id;
  return id;
}

/** An admin disables a tenant (the kill switch: its tokens revoked) or enables it again. */
export class SetTenant extends Step {
  constructor(
    readonly tenant: "acme" | "stopper",
    readonly enabled: boolean,
    readonly at: Inst,
  ) {
    super();
  }
  check = (m: Readonly<Model>) => m.tenants[this.tenant]!.enabled !== this.enabled;
  async act(m: Model, r: RealSystem) {
    const res = await adminCall(url(r, this.at), ops(m).plain, "POST", `/tenants/${this.tenant}/${this.enabled ? "enable" : "disable"}`);
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    const t = m.tenants[this.tenant]!;
    t.enabled = this.enabled;
    t.changedAt = m.now();
    if (!this.enabled) killTokens(m, this.tenant);
  }
  toString = () => `${this.enabled ? "enable" : "disable"}(${this.tenant}, @${this.at})`;
}

/**
 * The kill switch revokes every gateway token the tenant holds (capped tokens, grants' current access tokens, the
 * runtime, CDP and live view tokens of its sandboxes and sessions) and stops its sandboxes and sessions.
 */
function killTokens(m: Model, tenant: string) {
  const now = m.now();
  for (const t of m.mints) if (t.tenant === tenant && t.diedAt === undefined) t.diedAt = now;
  for (const g of m.grants) if (g.tenant === tenant && g.accessDiedAt === undefined) g.accessDiedAt = now;
  // It stops the tenant's open sandboxes and sessions too (src/operators/actions/kill-switch.ts): their holds settle.
  for (const r of m.resources)
    if (r.tenant === tenant) {
      r.tokensDiedAt ??= now;
      r.stoppedAt ??= now;
    }
}

export class SignIn extends Step {
  constructor(
    readonly n: number,
    readonly at: Inst,
  ) {
    super();
  }
  check = (m: Readonly<Model>) => liveKeys(m as Model).length > 0;
  async act(m: Model, r: RealSystem) {
    const k = pick(liveKeys(m), this.n)!;
    const res = await consoleSignIn(url(r, this.at), k.plain);
    expect(res.status).toBe(303);
    m.cookies.push({ kind: "cookie", tenant: k.tenant, parent: k, cookie: res.cookie!, bornAt: m.now() });
    m.secrets.add(res.cookie!.split("=").slice(1).join("="));
  }
  toString = () => `consoleSignIn(key #${this.n}, @${this.at})`;
}

export class Consent extends Step {
  constructor(
    readonly n: number,
    readonly scopes: string[],
    readonly at: Inst,
    readonly exchangeAt: Inst,
    readonly tools?: string[],
  ) {
    super();
  }
  /** Jobs are acme's alone: a consent naming them is for an acme key. */
  private keys = (m: Model) => liveKeys(m).filter((k) => (this.scopes.includes("jobs") ? k.tenant === "acme" : k.tenant !== "ops"));
  check = (m: Readonly<Model>) => this.keys(m as Model).length > 0;
  async act(m: Model, r: RealSystem) {
    const k = pick(this.keys(m), this.n)!;
    const cap = "0.010";
    const g = await consent(url(r, this.at), url(r, this.exchangeAt), k.plain, this.scopes, cap, this.tools);
    const shown = String(typeof g.error === "string" ? g.error : JSON.stringify(g.error))
      .replace(/<style>[\s\S]*?<\/style>/, "")
      .replace(/<[^>]+>/g, " ")
      .replace(/\s+/g, " ");
    expect(g.status, `consent: ${shown.slice(0, 400)}`).toBe(200);
    const grant: GrantM = {
      kind: "grant",
      n: m.grants.length,
      tenant: k.tenant,
      parent: k,
      clientId: g.clientId!,
      access: g.access!,
      accessAt: m.now(),
      refresh: g.refresh!,
      scopes: this.scopes,
      ...(this.tools ? { tools: this.tools } : {}),
      cap: usdToAtomic(cap),
      spent: 0n,
      bornAt: m.now(),
    };
    m.grants.push(grant);
    m.secrets.add(grant.access).add(grant.refresh);
  }
  toString = () =>
    `consent(key #${this.n}, [${this.scopes}]${this.tools ? ` tools [${this.tools}]` : ""}, @${this.at}→@${this.exchangeAt})`;
}

/** `n` refreshes with the grant's refresh token at once, spread over both instances (as an MCP host's parallel calls). */
export class Refresh extends Step {
  constructor(
    readonly g: number,
    readonly n: number,
  ) {
    super();
  }
  check = (m: Readonly<Model>) => m.grants.length > 0;
  async act(m: Model, r: RealSystem) {
    const g = pick(m.grants, this.g)!;
    const before = refreshLiveness(m, g);
    const answers = await Promise.all(Array.from({ length: this.n }, (_, i) => refresh(url(r, (i % 2) as Inst), g.refresh, g.clientId)));
    const ok = answers.filter((a) => a.status === 200);
    for (const a of ok) m.secrets.add(a.json.access_token).add(a.json.refresh_token);
    if (before === "dead") {
      expect(ok.length, `refresh of dead grant #${g.n} answered 200\n${trailOf(m)}`).toBe(0);
      return;
    }
    if (before === "either") {
      if (ok.length === 0) {
        g.diedAt = m.now();
        return;
      }
      m.known.add("grantOutlivesKey");
    } else if (this.n > 1 && ok.length < this.n) {
      // Some of the parallel refreshes were refused: the grant was revoked as for a reused refresh token.
      if (!KNOWN.parallelRefreshRevokesGrant)
        expect.fail(`parallel refresh (${this.n}) of grant #${g.n}: ${JSON.stringify(answers.map((a) => a.json))}\n${trailOf(m)}`);
      m.known.add("parallelRefreshRevokesGrant");
      g.diedAt = m.now();
      return;
    } else {
      expect(ok.length, `refresh of live grant #${g.n}: ${JSON.stringify(answers.map((a) => a.json))}\n${trailOf(m)}`).toBe(this.n);
    }
    // The pairs handed out in one grace window are the same pair.
    const pairs = new Set(ok.map((a) => `${a.json.access_token} ${a.json.refresh_token}`));
    if (pairs.size > 1 && KNOWN.parallelRefreshRevokesGrant) {
      m.known.add("parallelRefreshRevokesGrant");
      g.diedAt = m.now();
      return;
    }
    expect(pairs.size, `parallel refreshes of grant #${g.n} got different pairs\n${trailOf(m)}`).toBe(1);
    g.access = ok[0]!.json.access_token;
    g.refresh = ok[0]!.json.refresh_token;
    g.accessAt = m.now();
    g.accessDiedAt = undefined;
    g.bornAt = m.now();
  }
  toString = () => `refresh(grant #${this.g}, ×${this.n})`;
}

/** Whether the grant's refresh token must work: as the grant (the kill switch revokes access tokens, not the grant). */
function refreshLiveness(m: Model, g: GrantM): Liveness {
  if (g.diedAt !== undefined || !m.tenants[g.tenant]!.enabled) return "dead";
  if (g.parent.diedAt !== undefined) return KNOWN.grantOutlivesKey ? "either" : "dead";
  return "alive";
}

/** The tenant revokes a grant (its grants API with a key), or the client revokes its refresh token (RFC 7009). */
export class RevokeGrant extends Step {
  constructor(
    readonly g: number,
    readonly how: "tenant" | "client",
    readonly at: Inst,
  ) {
    super();
  }
  check = (m: Readonly<Model>) => m.grants.some((g) => g.diedAt === undefined);
  async act(m: Model, r: RealSystem) {
    const g = pick(
      m.grants.filter((g) => g.diedAt === undefined),
      this.g,
    )!;
    const key = liveKeys(m, g.tenant)[0];
    if (this.how === "tenant" && key) {
      const list = await (await fetch(`${url(r, this.at)}/_tollgate/grants`, { headers: { "x-api-key": key.plain } })).json();
      const mine = (list.grants as Array<{ id: string; clientId?: string; client?: { id?: string }; state: string }>).find(
        (x) => (x.clientId ?? x.client?.id) === g.clientId,
      );
      expect(mine, `grant #${g.n} in its tenant's list: ${JSON.stringify(list).slice(0, 400)}`).toBeDefined();
      const res = await fetch(`${url(r, this.at)}/_tollgate/grants/${mine!.id}`, { method: "DELETE", headers: { "x-api-key": key.plain } });
      await res.body?.cancel();
      expect(res.status).toBe(200);
    } else {
      const res = await fetch(`${url(r, this.at)}/revoke`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token: g.refresh, token_type_hint: "refresh_token", client_id: g.clientId }),
      });
      await res.body?.cancel();
      expect(res.status).toBe(200);
    }
    g.diedAt = m.now();
  }
  toString = () => `revokeGrant(#${this.g}, by ${this.how}, @${this.at})`;
}

export class Mint extends Step {
  constructor(
    readonly n: number,
    readonly at: Inst,
  ) {
    super();
  }
  check = (m: Readonly<Model>) => liveKeys(m as Model).some((k) => k.tenant !== "ops");
  async act(m: Model, r: RealSystem) {
    const k = pick(
      liveKeys(m).filter((k) => k.tenant !== "ops"),
      this.n,
    )!;
    const res = await mintToken(url(r, this.at), k.plain, { kind: "mcp", scopes: ["search"], cap: "0.010", ttlSeconds: 600 });
    // A cap is refused above the tenant's daily limit (what remains of a total budget; these tenants have none).
    const t = m.tenants[k.tenant]!;
    if (t.daily !== undefined && t.daily < usdToAtomic("0.010")) {
      expect(res.status, JSON.stringify(res.json)).toBe(400);
      expect(res.json.code).toBe("cap_above_budget");
      return;
    }
    expect(res.status, JSON.stringify(res.json)).toBe(201);
    m.mints.push({ kind: "mint", tenant: k.tenant, parent: k, token: res.json.token, jti: res.json.jti, bornAt: m.now() });
    m.secrets.add(res.json.token);
  }
  toString = () => `mint(key #${this.n}, @${this.at})`;
}

type Payer = { cred: Cred; tenant: string; grant?: GrantM; what: string; liveness: Liveness };

function payers(m: Model): Payer[] {
  const out: Payer[] = [];
  for (const k of m.keys) {
    if (k.tenant === "ops" && !keyAlive(m, k)) continue;
    out.push({
      cred: { key: k.plain },
      tenant: k.tenant,
      what: `key ${k.tenant}/${k.id || "config"}`,
      liveness: keyAlive(m, k) ? "alive" : "dead",
    });
  }
  for (const g of m.grants)
    out.push({ cred: { bearer: g.access }, tenant: g.tenant, grant: g, what: `grant #${g.n}`, liveness: accessLiveness(m, g) });
  return out;
}

/** One paid search (x402, the gateway paying on the chain; or credit-billed) with a key or a grant's token. */
export class Pay extends Step {
  constructor(
    readonly n: number,
    readonly kind: "x402" | "credits",
    readonly at: Inst,
  ) {
    super();
  }
  check = () => true;
  async act(m: Model, r: RealSystem) {
    const p = pick(payers(m), this.n)!;
    const res = await paidSearch(url(r, this.at), p.cred, this.kind, `model ${m.trail.length} ${Math.random()}`);
    settlePay(m, p, this.kind, res.status, res.json);
  }
  toString = () => `pay(${this.kind}, payer #${this.n}, @${this.at})`;
}

/** What the model says of one paid call's answer, and what it then counts as spent. */
function settlePay(m: Model, p: Payer, kind: "x402" | "credits", status: number, json: any) {
  const t = m.tenants[p.tenant]!;
  const price = PRICE[kind];
  const why = `${p.what} paid ${kind}: ${status} ${JSON.stringify(json)?.slice(0, 200)}\n${trailOf(m)}`;
  if (p.liveness === "dead") {
    expect([401, 403], why).toContain(status);
    return;
  }
  if (p.grant && !p.grant.scopes.includes("search")) {
    // A grant without the search scope must be refused on the HTTP row as at /mcp.
    if (status === 200 && KNOWN.grantScopeOnlyAtMcp) m.known.add("grantScopeOnlyAtMcp");
    else {
      expect(status, why).toBe(403);
      return;
    }
  } else if (p.liveness === "either") {
    if (status === 401 || status === 403) return;
    m.known.add("grantOutlivesKey");
  }
  const left = t.daily === undefined ? undefined : t.daily - used(m, t.id);
  if (t.stopped || (left !== undefined && left < price)) {
    expect(status, why).toBe(402);
    expect(json.code, why).toBe("budget_exceeded");
    if (t.onExhausted === "stop") stopTenant(m, t.id);
    return;
  }
  if (p.grant && p.grant.spent + price > p.grant.cap) {
    expect(status, why).toBe(402);
    expect(json.code, why).toBe("token_cap_exceeded");
    return;
  }
  expect(status, why).toBe(200);
  t.spent[kind] += price;
  if (p.grant) p.grant.spent += price;
  if (t.onExhausted === "stop" && t.daily !== undefined && used(m, t.id) >= t.daily) stopTenant(m, t.id);
}

/** What a tenant's budget counts now: its paid calls, and what its sandboxes and sessions hold or settled to. */
const used = (m: Model, tenant: string) => {
  const t = m.tenants[tenant]!;
  return t.spent.x402 + t.spent.credits + resourceMoney(m, tenant);
};

function stopTenant(m: Model, tenant: string) {
  const t = m.tenants[tenant]!;
  if (t.stopped) return;
  t.stopped = true;
  killTokens(m, tenant);
}

/** `k` paid calls at once with one tenant's live keys, spread over both instances: no more succeed than fit. */
export class PayTogether extends Step {
  constructor(
    readonly tenant: "acme" | "stopper",
    readonly k: number,
    readonly kind: "x402" | "credits",
  ) {
    super();
  }
  check = (m: Readonly<Model>) => liveKeys(m as Model, this.tenant).length > 0;
  async act(m: Model, r: RealSystem) {
    const keys = liveKeys(m, this.tenant);
    const answers = await Promise.all(
      Array.from({ length: this.k }, (_, i) =>
        paidSearch(
          url(r, (i % 2) as Inst),
          { key: keys[i % keys.length]!.plain },
          this.kind,
          `together ${m.trail.length} ${i} ${Math.random()}`,
        ),
      ),
    );
    const t = m.tenants[this.tenant]!;
    const left = t.stopped ? 0n : t.daily === undefined ? BigInt(this.k) * PRICE[this.kind] : t.daily - used(m, t.id);
    const fits = Number(left / PRICE[this.kind]);
    const ok = answers.filter((a) => a.status === 200).length;
    const why = `${this.k} at once, ${fits} fit: ${JSON.stringify(answers.map((a) => [a.status, a.json?.code]))}\n${trailOf(m)}`;
    expect(ok, why).toBe(Math.min(this.k, fits));
    for (const a of answers) if (a.status !== 200) expect(a.json?.code, why).toBe("budget_exceeded");
    t.spent[this.kind] += BigInt(ok) * PRICE[this.kind];
    if (t.onExhausted === "stop" && (ok < this.k || (t.daily !== undefined && used(m, t.id) >= t.daily))) stopTenant(m, t.id);
  }
  toString = () => `payTogether(${this.tenant}, ×${this.k}, ${this.kind})`;
}

/** An instance restarts: a new gateway on the same state (the same Redis, or the same memory stores). */
export class Restart extends Step {
  constructor(readonly at: Inst) {
    super();
  }
  check = (m: Readonly<Model>) => !(KNOWN.restartRevertsApply && m.applied);
  async act(_m: Model, r: RealSystem) {
    await r.restart(this.at);
  }
  toString = () => `restart(@${this.at})`;
}

/** Config as code: the current config exported, acme's daily budget changed in it, and the document applied. */
export class ApplyConfig extends Step {
  constructor(
    readonly daily: "0.020" | "0.040" | "0.060",
    readonly at: Inst,
  ) {
    super();
  }
  check = () => true;
  async act(m: Model, r: RealSystem) {
    const key = ops(m).plain;
    const doc = (await adminCall(url(r, this.at), key, "GET", "/config/export?format=json")).json;
    const acme = doc.tenants.find((t: { id: string }) => t.id === "acme");
    const same = typeof acme.budget?.daily === "string" && usdToAtomic(acme.budget.daily) === usdToAtomic(this.daily);
    acme.budget = { ...(acme.budget ?? {}), daily: this.daily };
    const res = await adminCall(url(r, this.at), key, "POST", "/config/apply", { document: doc });
    // One owner per tenant (issue 54): acme is named by the gateway's own config, so an apply that changes it is
    // refused whole, by name; nothing changes (an apply of the same figure is in sync).
    if (!same) {
      expect(res.status, JSON.stringify(res.json)).toBe(409);
      expect(res.json.code).toBe("config_conflict");
      expect(res.json.message).toContain(`tenant "acme" is owned by the gateway's config file`);
      return;
    }
    expect(res.status, JSON.stringify(res.json)).toBe(200);
    m.applied = true;
    const t = m.tenants.acme!;
    t.changedAt = m.now();
    const highest = maxDailySeen.get(t) ?? t.daily!;
    t.daily = usdToAtomic(this.daily);
    if (t.daily > highest) maxDailySeen.set(t, t.daily);
    else maxDailySeen.set(t, highest);
    // Applied on one instance, the other follows within the fleet bound: wait for it before the next call counts on it.
    await new Promise((res) => setTimeout(res, 1_100));
  }
  toString = () => `applyConfig(acme daily ${this.daily}, @${this.at})`;
}

/**
 * One owner per tenant (issue 54): an admin edits a setting of a tenant the gateway's config names, through the admin
 * API. Refused (409 config_conflict, naming the tenant), and nothing changes; the operational actions the other steps
 * take on the same tenants (createKey, revoke/rotate, disable/enable) are accepted, and no restart may revert them.
 */
export class EditOwnedTenant extends Step {
  constructor(
    readonly tenant: "acme" | "stopper" | "ops",
    readonly how: "budget" | "scopes" | "agentPolicies" | "delete",
    readonly at: Inst,
  ) {
    super();
  }
  check = () => true;
  async act(m: Model, r: RealSystem) {
    const key = ops(m).plain;
    const before = (await adminCall(url(r, this.at), key, "GET", `/tenants/${this.tenant}`)).json;
    const path = `/tenants/${this.tenant}`;
    const res =
      this.how === "budget"
        ? await adminCall(url(r, this.at), key, "PUT", `${path}/budget`, { daily: "9.00" })
        : this.how === "scopes"
          ? await adminCall(url(r, this.at), key, "PUT", `${path}/scopes`, ["search"])
          : this.how === "agentPolicies"
            ? await adminCall(url(r, this.at), key, "PATCH", path, { agentPolicies: { wide: {} } })
            : await adminCall(url(r, this.at), key, "DELETE", path);
    const why = `${this.toString()}: ${JSON.stringify(res.json)}\n${trailOf(m)}`;
    // An admin's own scope or existence: the lockout guard may answer first; either way 409 and nothing changes.
    expect(res.status, why).toBe(409);
    if (res.json.code !== "admin_lockout") {
      expect(res.json.code, why).toBe("config_conflict");
      expect(res.json.message, why).toContain(`tenant "${this.tenant}" is owned by the gateway's config file`);
    }
    const after = (await adminCall(url(r, this.at), key, "GET", path)).json;
    expect(after, why).toEqual(before);
  }
  toString = () => `editOwnedTenant(${this.tenant} ${this.how}, @${this.at})`;
}

/** A client puts a credential in a path (pasted by mistake): every record and view of the request must redact it. */
export class SecretInPath extends Step {
  constructor(
    readonly n: number,
    readonly at: Inst,
  ) {
    super();
  }
  check = (m: Readonly<Model>) => liveKeys(m as Model).length > 0;
  async act(m: Model, r: RealSystem) {
    const k = pick(liveKeys(m), this.n)!;
    const res = await fetch(`${url(r, this.at)}/api/session/${k.plain}?key=${k.plain}`, { headers: { "x-api-key": k.plain } });
    await res.body?.cancel();
    expect(res.status).not.toBe(500);
  }
  toString = () => `secretInPath(key #${this.n}, @${this.at})`;
}

/** A grant whose consent chose the web_search tool alone starts a scrape on the HTTP row: refused as at /mcp. */
export class OffTool extends Step {
  constructor(
    readonly g: number,
    readonly at: Inst,
  ) {
    super();
  }
  private candidates = (m: Model) => m.grants.filter((g) => g.tools && accessLiveness(m, g) === "alive");
  check = (m: Readonly<Model>) => this.candidates(m as Model).length > 0;
  async act(m: Model, r: RealSystem) {
    const g = pick(this.candidates(m), this.g)!;
    const res = await fetch(`${url(r, this.at)}/api/scrape`, {
      method: "POST",
      headers: { authorization: `Bearer ${g.access}`, "content-type": "application/json" },
      body: JSON.stringify({ url: "https://example.com/" }),
    });
    const body = await res.text();
    if (res.status === 403) return;
    if (KNOWN.grantScopeOnlyAtMcp && res.status !== 200) {
      m.known.add("grantScopeOnlyAtMcp");
      return;
    }
    expect.fail(`grant #${g.n} (tools ${g.tools}) started a scrape: ${res.status} ${body.slice(0, 200)}\n${trailOf(m)}`);
  }
  toString = () => `offTool(grant #${this.g}, @${this.at})`;
}

/** The credit hold of a sandbox or session: the default minute price (config/schema.ts) × the minutes it may run. */
const HOLD = usdToAtomic("0.0017") * BigInt(RESOURCE_MINUTES);
/** At most this many run at once (a session is a real Chromium, a sandbox real processes, on a shared machine). */
const MAX_OPEN = { sandbox: 2, session: 1 } as const;

const tokenIn = (pathAndQuery: string, name: string) => new URL(pathAndQuery, "http://x").searchParams.get(name) ?? "";

/**
 * A tenant key creates a sandbox or a session (credit-billed: price × minutes held until it stops): refused with 402
 * budget_exceeded when the hold does not fit what is left of the budget, as a paid call is.
 */
export class CreateResource extends Step {
  constructor(
    readonly kind: "sandbox" | "session",
    readonly n: number,
    readonly at: Inst,
  ) {
    super();
  }
  private keys = (m: Model) => liveKeys(m).filter((k) => k.tenant !== "ops");
  check = (m: Readonly<Model>) =>
    this.keys(m as Model).length > 0 &&
    m.resources.filter((r) => r.kind === this.kind && r.stoppedAt === undefined).length < MAX_OPEN[this.kind];
  async act(m: Model, r: RealSystem) {
    const k = pick(this.keys(m), this.n)!;
    const t = m.tenants[k.tenant]!;
    const res = await createResource(url(r, this.at), k.plain, this.kind);
    const why = `${this.kind} create with ${k.tenant}/${k.id || "config"}: ${res.status} ${JSON.stringify(res.json)?.slice(0, 300)}\n${trailOf(m)}`;
    const left = t.daily === undefined ? undefined : t.daily - used(m, t.id);
    if (t.stopped || (left !== undefined && left < HOLD)) {
      expect(res.status, why).toBe(402);
      expect(res.json?.code, why).toBe("budget_exceeded");
      if (t.onExhausted === "stop") stopTenant(m, t.id);
      return;
    }
    expect(res.status, why).toBe(200);
    const made: ResourceM = {
      kind: this.kind,
      n: m.resources.length,
      id: res.id!,
      tenant: k.tenant,
      parent: k,
      ...(res.runtime ? { runtime: res.runtime } : {}),
      ...(res.cdp ? { cdp: res.cdp, live: res.live } : {}),
      hold: HOLD,
      amount: HOLD,
      bornAt: m.now(),
      probeKeys: { runtime: {}, cdp: {}, live: {} },
    };
    m.resources.push(made);
    if (res.runtime) m.secrets.add(res.runtime);
    if (res.cdp) m.secrets.add(tokenIn(res.cdp, "token")).add(tokenIn(res.live!, "ticket"));
    if (t.onExhausted === "stop" && t.daily !== undefined && used(m, t.id) >= t.daily) stopTenant(m, t.id);
  }
  toString = () => `create${this.kind === "sandbox" ? "Sandbox" : "Session"}(key #${this.n}, @${this.at})`;
}

/** A tenant key stops one of its tenant's running sandboxes or sessions: the hold settles, its credentials die. */
export class StopResource extends Step {
  constructor(
    readonly kind: "sandbox" | "session",
    readonly n: number,
    readonly at: Inst,
  ) {
    super();
  }
  private open = (m: Model) =>
    m.resources.filter((x) => x.kind === this.kind && x.stoppedAt === undefined && liveKeys(m, x.tenant).length > 0);
  check = (m: Readonly<Model>) => this.open(m as Model).length > 0;
  async act(m: Model, r: RealSystem) {
    const x = pick(this.open(m), this.n)!;
    const key = liveKeys(m, x.tenant)[0]!;
    const res = await stopResource(url(r, this.at), key.plain, x.kind, x.id);
    expect(res.status, `stop ${x.kind} #${x.n}: ${JSON.stringify(res.json)}\n${trailOf(m)}`).toBe(200);
    x.stoppedAt = m.now();
  }
  toString = () => `stop${this.kind === "sandbox" ? "Sandbox" : "Session"}(#${this.n}, @${this.at})`;
}

/**
 * What a person may do, the same on every surface: the admin API's reads iff an operator (admin or read-only); the
 * console's pages of every tenant iff an operator, of its own tenant only for a tenant user; connecting an agent
 * (the consent page's sign-in) only as a tenant user of a live tenant, for that tenant.
 */
async function expectRights(m: Model, r: RealSystem, at: Inst, person: string, cookie: string | undefined) {
  const mapped = roleOf(m.profiles[person]!);
  const readsAll = mapped !== undefined && mapped.role !== "tenant";
  const live = mapped?.role === "tenant" ? m.tenants[mapped.tenant!]!.enabled : mapped !== undefined;
  const who = `${person} (${m.profiles[person]})`;
  const people = r.people!;
  const [admin, agent] = await Promise.all([personAdminRead(url(r, at), people, person), personConsent(url(r, at), people, person)]);
  m.secrets.add(admin.jwt);
  expect(admin.status, `admin API read by ${who}\n${trailOf(m)}`).toBe(readsAll ? 200 : 403);
  if (mapped?.role === "tenant" && live) {
    expect(agent.status, `consent sign-in of ${who}\n${trailOf(m)}`).toBe(200);
    expect(agent.tenant, `consent sign-in of ${who}: the tenant\n${trailOf(m)}`).toBe(mapped.tenant);
  } else expect(agent.status, `consent sign-in of ${who} (no tenant user of a live tenant)\n${trailOf(m)}`).toBe(403);
  if (!cookie) return;
  const other = (1 - at) as Inst;
  for (const [tenant, i] of [
    ["stopper", at],
    ["acme", other],
  ] as const) {
    const status = await consolePage(url(r, i), cookie, `/tenants/${tenant}`);
    const may = readsAll || mapped?.tenant === tenant;
    const what = `console: ${who} reads ${tenant}'s page: ${status}\n${trailOf(m)}`;
    if (may) expect(status, what).toBe(200);
    else expect(status, what).not.toBe(200);
  }
}

/** The provider's account of a person changes groups (promoted, demoted, moved to a tenant, or given no role). */
export class ChangeGroups extends Step {
  constructor(
    readonly person: string,
    readonly profile: Profile,
    readonly at: Inst,
  ) {
    super();
  }
  check = (m: Readonly<Model>) => m.profiles[this.person] !== this.profile;
  async act(m: Model, r: RealSystem) {
    r.people!.setProfile(this.person, this.profile);
    m.profiles[this.person] = this.profile;
    // What the provider vouches for from now on holds on every surface at once (no sign-in needed for the API).
    const admin = await personAdminRead(url(r, this.at), r.people!, this.person);
    m.secrets.add(admin.jwt);
    const mapped = roleOf(this.profile);
    expect(admin.status, `admin API read by ${this.person} (${this.profile})\n${trailOf(m)}`).toBe(
      mapped && mapped.role !== "tenant" ? 200 : 403,
    );
  }
  toString = () => `changeGroups(${this.person} → ${this.profile}, @${this.at})`;
}

/**
 * A person signs in to the console through the provider: a session with the role its groups map to now (none, and no
 * session, without a role or for a tenant that is disabled); then its rights are held equal on the console, the admin
 * API (the provider's JWT) and the consent page.
 */
export class PersonSignIn extends Step {
  constructor(
    readonly person: string,
    readonly at: Inst,
  ) {
    super();
  }
  check = () => true;
  async act(m: Model, r: RealSystem) {
    const mapped = roleOf(m.profiles[this.person]!);
    const res = await personConsoleSignIn(url(r, this.at), r.people!, this.person);
    // The gateway learned what the provider says now: what the person made under another role or tenant is dead.
    personSignedInM(m, this.person, m.profiles[this.person]!);
    const live = mapped?.role === "tenant" ? m.tenants[mapped.tenant!]!.enabled : mapped !== undefined;
    const signedIn = res.cookie ? (await consolePage(url(r, this.at), res.cookie, "")) === 200 : false;
    const why = `console sign-in of ${this.person} (${m.profiles[this.person]}): ${res.status} ${res.html
      .replace(/<style>[\s\S]*?<\/style>/, "")
      .replace(/<[^>]+>/g, " ")
      .replace(/\s+/g, " ")
      .slice(0, 300)}\n${trailOf(m)}`;
    if (!mapped || !live) {
      expect(signedIn, why).toBe(false);
      await expectRights(m, r, this.at, this.person, undefined);
      return;
    }
    expect(res.status, why).toBe(200);
    expect(signedIn, why).toBe(true);
    for (const part of res.cookie!.split("; ")) m.secrets.add(part.split("=").slice(1).join("="));
    m.personSessions.push({ person: this.person, ...mapped, cookie: res.cookie!, bornAt: m.now() });
    await expectRights(m, r, this.at, this.person, res.cookie);
  }
  toString = () => `personSignIn(${this.person}, @${this.at})`;
}

/**
 * A person connects an agent for good (the consent page's "Sign in with <provider>", the form allowed, the code
 * exchanged on the other instance or the same): a grant for the tenant their groups map them to, only as a tenant user
 * of a live tenant. The grant's parent is the person's right: it dies at the first sign-in that maps them otherwise.
 */
export class PersonGrant extends Step {
  constructor(
    readonly person: string,
    readonly at: Inst,
    readonly exchangeAt: Inst,
  ) {
    super();
  }
  check = () => true;
  async act(m: Model, r: RealSystem) {
    const profile = m.profiles[this.person]!;
    const mapped = roleOf(profile);
    const cap = "0.010";
    const g = await personGrant(url(r, this.at), url(r, this.exchangeAt), r.people!, this.person, cap);
    // Its sign-in is one the gateway learns from, whatever it led to.
    personSignedInM(m, this.person, profile);
    const may = mapped?.role === "tenant" && m.tenants[mapped.tenant!]!.enabled;
    const why = `person grant of ${this.person} (${profile}): ${g.status} ${JSON.stringify(g.error ?? "").slice(0, 300)}\n${trailOf(m)}`;
    if (!may) {
      expect(g.access, why).toBeUndefined();
      return;
    }
    expect(g.status, why).toBe(200);
    expect(g.tenant, why).toBe(mapped!.tenant);
    const now = m.now();
    const grant: GrantM = {
      kind: "grant",
      n: m.grants.length,
      tenant: mapped!.tenant!,
      // The person's right to consent for the tenant, standing in for a key: dead once a sign-in maps them otherwise.
      parent: { kind: "key", tenant: mapped!.tenant!, id: `person:${this.person}`, plain: "", bornAt: now },
      person: this.person,
      clientId: g.clientId!,
      access: g.access!,
      accessAt: now,
      refresh: g.refresh!,
      scopes: ["search"],
      cap: usdToAtomic(cap),
      spent: 0n,
      bornAt: now,
    };
    m.grants.push(grant);
    m.secrets.add(grant.access).add(grant.refresh);
  }
  toString = () => `personGrant(${this.person}, @${this.at}→@${this.exchangeAt})`;
}

export function commandArbitraries(withPeople = false) {
  const n = fc.nat({ max: 20 });
  const tenant = fc.constantFrom("acme", "stopper");
  const paidKind = fc.constantFrom<"x402" | "credits">("x402", "credits");
  const resourceKind = fc.constantFrom<"sandbox" | "session">("sandbox", "session");
  return fc.oneof(
    { weight: 3, arbitrary: fc.tuple(fc.constantFrom("acme", "stopper", "ops"), inst).map(([t, i]) => new CreateKey(t, i)) },
    {
      weight: 2,
      arbitrary: fc.tuple(n, fc.constantFrom<"revoke" | "rotate">("revoke", "rotate"), inst).map(([a, b, c]) => new EndKey(a, b, c)),
    },
    { weight: 2, arbitrary: fc.tuple(tenant, fc.boolean(), inst).map(([t, e, i]) => new SetTenant(t as "acme", e, i)) },
    { weight: 1, arbitrary: fc.tuple(n, inst).map(([a, i]) => new SignIn(a, i)) },
    {
      weight: 3,
      arbitrary: fc
        .tuple(n, fc.constantFrom<string[]>(["search"], ["search", "sessions"], ["sessions"], ["search", "jobs"]), inst, inst)
        .map(([a, s, i, j]) => new Consent(a, s, i, j, s.includes("jobs") ? ["web_search"] : undefined)),
    },
    { weight: 3, arbitrary: fc.tuple(n, fc.integer({ min: 1, max: 3 })).map(([g, k]) => new Refresh(g, k)) },
    {
      weight: 1,
      arbitrary: fc.tuple(n, fc.constantFrom<"tenant" | "client">("tenant", "client"), inst).map(([g, h, i]) => new RevokeGrant(g, h, i)),
    },
    { weight: 2, arbitrary: fc.tuple(n, inst).map(([a, i]) => new Mint(a, i)) },
    { weight: 5, arbitrary: fc.tuple(n, paidKind, inst).map(([a, k, i]) => new Pay(a, k, i)) },
    {
      weight: 1,
      arbitrary: fc.tuple(tenant, fc.integer({ min: 2, max: 4 }), paidKind).map(([t, k, p]) => new PayTogether(t as "acme", k, p)),
    },
    { weight: 1, arbitrary: inst.map((i) => new Restart(i)) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(fc.constantFrom<"0.020" | "0.040" | "0.060">("0.020", "0.040", "0.060"), inst)
        .map(([d, i]) => new ApplyConfig(d, i)),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(
          fc.constantFrom<"acme" | "stopper" | "ops">("acme", "stopper", "ops"),
          fc.constantFrom<"budget" | "scopes" | "agentPolicies" | "delete">("budget", "scopes", "agentPolicies", "delete"),
          inst,
        )
        .map(([t, h, i]) => new EditOwnedTenant(t, h, i)),
    },
    { weight: 1, arbitrary: fc.tuple(n, inst).map(([a, i]) => new SecretInPath(a, i)) },
    { weight: 4, arbitrary: fc.tuple(n, inst).map(([g, i]) => new OffTool(g, i)) },
    { weight: 2, arbitrary: fc.tuple(resourceKind, n, inst).map(([k, a, i]) => new CreateResource(k, a, i)) },
    { weight: 1, arbitrary: fc.tuple(resourceKind, n, inst).map(([k, a, i]) => new StopResource(k, a, i)) },
    ...(withPeople
      ? [
          {
            weight: 1,
            arbitrary: fc
              .tuple(fc.constantFrom(...PEOPLE), fc.constantFrom<Profile>("admin", "readonly", "tenant-acme", "tenant-ops", "none"), inst)
              .map(([p, g, i]) => new ChangeGroups(p, g, i)),
          },
          { weight: 1, arbitrary: fc.tuple(fc.constantFrom(...PEOPLE), inst).map(([p, i]) => new PersonSignIn(p, i)) },
          {
            weight: 1,
            arbitrary: fc.tuple(fc.constantFrom(...PEOPLE), inst, inst).map(([p, i, j]) => new PersonGrant(p, i, j)),
          },
        ]
      : []),
  );
}

export { cookieAlive };
