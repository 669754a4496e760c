// Several upstream accounts on one emulator, as a team with several plans would have them on the real service: each
// account its own API key, its own resources (another account's id answers 404 and its lists leave them out), its own
// concurrency limits (429 concurrency_limit_exceeded past them) and its own credit usage at /api/team/credit-info.
// Tests make one account refuse creations, slow down or fail on demand (set(), or PUT /_emulator/accounts/:id).
import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes, timingSafeEqual } from "node:crypto";
import type { MiddlewareHandler } from "hono";
import { presentedApiKey } from "./auth.js";

/** One account to run besides the default one (the emulator's `apiKey`, account id "default"). */
export interface EmulatorAccountSpec {
  id: string;
  /** Its API key; generated when absent. */
  apiKey?: string;
  /** Its concurrency limits: a creation past them answers 429 `concurrency_limit_exceeded`. */
  limits?: { sessions?: number; sandboxes?: number };
}

/**
 * How an account behaves now. "ok": normally; "refuse": every creation answers 429 concurrency_limit_exceeded;
 * "fail": every control-plane call answers 503; "slow": every control-plane call waits `delayMs` first.
 */
export type AccountMode = "ok" | "refuse" | "fail" | "slow";

export interface EmulatorAccount {
  id: string;
  apiKey: string;
  limits: { sessions?: number; sandboxes?: number };
  mode: AccountMode;
  delayMs: number;
  /** Calls with this account's key the emulator received (creations and the rest), for tests. */
  calls: number;
  /** Creations that made a resource. */
  created: number;
  /** More keys the account takes beside `apiKey` (a key being rotated: addKey, revokeKey). */
  otherKeys?: string[];
}

export const DEFAULT_ACCOUNT = "default";

/** Creation paths whose resources count against a concurrency limit. */
const LIMITED: Record<string, "sessions" | "sandboxes"> = { "/api/session": "sessions", "/api/sandbox": "sandboxes" };
const STOP = /^\/api\/(session|sandbox)\/([^/]+)\/stop$/;

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const jsonError = (status: number, message: string, code: string) =>
  new Response(JSON.stringify({ message, code }), { status, headers: { "content-type": "application/json" } });

export class EmulatorAccounts {
  readonly list: EmulatorAccount[];
  /** Which account made each resource (by its id). */
  private readonly owners = new Map<string, string>();
  /** Live sessions and sandboxes of each account (stopped ones leave). */
  private readonly live = new Map<string, { kind: "sessions" | "sandboxes"; account: string }>();
  private readonly current = new AsyncLocalStorage<string>();
  /** Whether a session is still live upstream (set by the sessions half): one that timed out leaves the count. */
  sessionLive?: (id: string) => boolean;

  constructor(defaultKey: string, specs: EmulatorAccountSpec[] = []) {
    const base: EmulatorAccount = { id: DEFAULT_ACCOUNT, apiKey: defaultKey, limits: {}, mode: "ok", delayMs: 0, calls: 0, created: 0 };
    this.list = [base];
    for (const s of specs) {
      const into = s.id === DEFAULT_ACCOUNT ? base : undefined;
      if (into) {
        into.limits = { ...s.limits };
        continue;
      }
      if (this.list.some((a) => a.id === s.id)) throw new Error(`accounts: duplicate account id "${s.id}"`);
      this.list.push({
        id: s.id,
        apiKey: s.apiKey ?? `emu_${s.id}_${randomBytes(12).toString("base64url")}`,
        limits: { ...s.limits },
        mode: "ok",
        delayMs: 0,
        calls: 0,
        created: 0,
      });
    }
  }

  /** More than the default account runs. */
  get several(): boolean {
    return this.list.length > 1;
  }

  get(id: string): EmulatorAccount | undefined {
    return this.list.find((a) => a.id === id);
  }

  byKey(key: string | undefined): EmulatorAccount | undefined {
    return key ? this.list.find((a) => same(a.apiKey, key) || (a.otherKeys ?? []).some((k) => same(k, key))) : undefined;
  }

  /** Makes an account take another key too (as the real service does while a key is rotated). */
  addKey(id: string, key: string): void {
    const a = this.get(id);
    if (!a) throw new Error(`accounts: no account "${id}"`);
    a.otherKeys = [...(a.otherKeys ?? []), key];
  }

  /** Stops an account taking a key (the old one, once rotated): its calls answer 401 from then on. */
  revokeKey(id: string, key: string): void {
    const a = this.get(id);
    if (!a) throw new Error(`accounts: no account "${id}"`);
    const rest = [a.apiKey, ...(a.otherKeys ?? [])].filter((k) => k !== key);
    if (!rest.length) throw new Error(`accounts: account "${id}" would take no key`);
    a.apiKey = rest[0]!;
    a.otherKeys = rest.slice(1);
  }

  /** Makes an account refuse creations, fail, slow down, or behave again. */
  set(id: string, mode: AccountMode, delayMs = 0): void {
    const a = this.get(id);
    if (!a) throw new Error(`accounts: no account "${id}"`);
    a.mode = mode;
    a.delayMs = mode === "slow" ? delayMs : 0;
  }

  /** The account of the request being served (its key's), if any. */
  currentAccount(): string | undefined {
    return this.current.getStore();
  }

  /** The account that made a resource. */
  ownerOf(id: string): string | undefined {
    return this.owners.get(id);
  }

  /** Live sessions or sandboxes of an account. */
  liveCount(account: string, kind: "sessions" | "sandboxes"): number {
    let n = 0;
    for (const [id, r] of this.live) {
      if (r.kind === "sessions" && this.sessionLive && !this.sessionLive(id)) {
        this.live.delete(id);
        continue;
      }
      if (r.account === account && r.kind === kind) n++;
    }
    return n;
  }

  /** The control plane's account step: mounted before every module's routes. */
  middleware(): MiddlewareHandler {
    return async (c, next) => {
      // One account with no limits and nothing asked of it: the emulator as it always was.
      const base = this.list[0]!;
      if (!this.several && base.mode === "ok" && base.limits.sessions === undefined && base.limits.sandboxes === undefined) return next();
      const account = this.byKey(presentedApiKey(c.req.raw.headers));
      if (!account) return next(); // no key or a wrong one: the module's own check answers
      account.calls++;
      const path = new URL(c.req.url).pathname;
      if (account.mode === "fail") return jsonError(503, "Service temporarily unavailable", "service_unavailable");
      if (account.mode === "slow") await new Promise((r) => setTimeout(r, account.delayMs));
      // Another account's resource is not this account's to see.
      let namesResource = false;
      for (const seg of path.split("/")) {
        const owner = seg && this.owners.get(decodeURIComponent(seg));
        if (owner && owner !== account.id) return jsonError(404, "Not found", "not_found");
        if (owner) namesResource = true;
      }
      const creating = c.req.method === "POST" && !namesResource && !path.startsWith("/api/web/search") && path !== "/api/web/fetch";
      const limited = creating ? LIMITED[path] : undefined;
      if (creating && account.mode === "refuse")
        return jsonError(429, "Concurrency limit reached for this account's plan", "concurrency_limit_exceeded");
      if (limited) {
        const max = account.limits[limited];
        if (max !== undefined && this.liveCount(account.id, limited) >= max)
          return jsonError(
            429,
            `Concurrency limit reached: ${max} ${limited} at once on this account's plan`,
            "concurrency_limit_exceeded",
          );
      }
      await this.current.run(account.id, next);
      const res = c.res;
      if (!res.ok || !(res.headers.get("content-type") ?? "").includes("application/json")) return;
      const stop = STOP.exec(path);
      if (stop && c.req.method === "PUT") this.live.delete(decodeURIComponent(stop[2]!));
      if (c.req.method === "POST" || c.req.method === "PUT") {
        const body = (await res
          .clone()
          .json()
          .catch(() => undefined)) as Record<string, unknown> | undefined;
        const id = body?.jobId ?? body?.id;
        if ((typeof id === "string" || typeof id === "number") && !this.owners.has(String(id))) {
          this.owners.set(String(id), account.id);
          account.created++;
          if (limited) this.live.set(String(id), { kind: limited, account: account.id });
        }
      } else if (c.req.method === "GET" && this.several) {
        // A list shows this account's resources only.
        const body = (await res
          .clone()
          .json()
          .catch(() => undefined)) as unknown;
        const filtered = this.filterList(body, account.id);
        if (filtered !== undefined) {
          const headers = new Headers(res.headers);
          headers.delete("content-length");
          c.res = new Response(JSON.stringify(filtered), { status: res.status, headers });
        }
      }
    };
  }

  /** A list body without other accounts' items, or undefined when nothing had to go. */
  private filterList(body: unknown, account: string): unknown {
    const theirs = (item: unknown) => {
      const id = (item as { id?: unknown } | null)?.id;
      const owner = id === undefined || id === null ? undefined : this.owners.get(String(id));
      return owner !== undefined && owner !== account;
    };
    if (Array.isArray(body)) return body.some(theirs) ? body.filter((i) => !theirs(i)) : undefined;
    if (!body || typeof body !== "object") return undefined;
    const out: Record<string, unknown> = { ...(body as Record<string, unknown>) };
    let changed = false;
    for (const [k, v] of Object.entries(out)) {
      if (!Array.isArray(v) || !v.some(theirs)) continue;
      const kept = v.filter((i) => !theirs(i));
      if (typeof out.totalCount === "number") out.totalCount -= v.length - kept.length;
      out[k] = kept;
      changed = true;
    }
    return changed ? out : undefined;
  }

  /** `PUT /_emulator/accounts/:id` `{mode, delayMs?}`, with the default account's key: how a test outside the process sets one. */
  controlRoute(): MiddlewareHandler {
    return async (c) => {
      const caller = this.byKey(presentedApiKey(c.req.raw.headers));
      if (caller?.id !== DEFAULT_ACCOUNT) return jsonError(401, "The default account's API key is required", "unauthorized");
      const id = c.req.param("id") ?? "";
      if (!this.get(id)) return jsonError(404, `No account ${id}`, "not_found");
      const body = (await c.req.json().catch(() => undefined)) as { mode?: unknown; delayMs?: unknown } | undefined;
      const mode = body?.mode;
      if (mode !== "ok" && mode !== "refuse" && mode !== "fail" && mode !== "slow")
        return jsonError(400, 'mode: expected "ok", "refuse", "fail" or "slow"', "invalid_request");
      const delayMs = typeof body?.delayMs === "number" && body.delayMs >= 0 ? Math.min(body.delayMs, 60_000) : 1000;
      this.set(id, mode, delayMs);
      return c.json({ id, mode, delayMs: this.get(id)!.delayMs });
    };
  }
}
