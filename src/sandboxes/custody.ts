// Custody of the upstream's per-sandbox runtime credentials: kept server-side, renewed before expiry, never handed out.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { upstreamJson } from "../upstream/upstream.js";
import { readWire } from "../upstream/records.js";
import { SANDBOX_ENDED, SandboxDetail } from "./wire.js";
import { stateKeys } from "../state/keys.js";

/** What the gateway keeps per running sandbox. Times are epoch ms. */
export interface RuntimeCredential {
  token: string;
  baseUrl: string;
  host?: string;
  expiresAt: number;
  receivedAt: number;
}

const RENEW_MAX_MS = 60_000;
/** How long a credential read from the shared store is reused before it is read again (see RuntimeCustody.peek). */
const SHARED_READ_FRESH_MS = 1000;
/** How long a credential this instance stored (or read) is taken to still be in the shared store, unchanged. */
const UNCHANGED_KEPT_MS = 30_000;

export const sandboxNotFound = (id: string) => new GatewayError(404, "not_found", `Sandbox ${id} not found`);
const sandboxNotRunning = () => new GatewayError(409, "sandbox_not_running", "Sandbox is not running");

/** Renew when ≤60 s are left, or ≤half the lifetime for short-lived tokens (so a 5 s token is not renewed per call). */
export function needsRenewal(cred: RuntimeCredential, now: number): boolean {
  const lifetime = cred.expiresAt - cred.receivedAt;
  return cred.expiresAt - now <= Math.min(RENEW_MAX_MS, lifetime / 2);
}

/** Whether the kept credential `kept` serves as well as a newly received one: the same runtime, not due for renewal. */
const stillServes = (kept: RuntimeCredential, received: RuntimeCredential, now: number) =>
  kept.baseUrl === received.baseUrl && kept.host === received.host && kept.expiresAt > now && !needsRenewal(kept, now);

export class RuntimeCustody {
  private readonly inflight = new Map<string, Promise<RuntimeCredential>>();
  /** The last stored text parsed, per sandbox, and when it was read: the hot path reads the same credential on every call. */
  private readonly parsed = new Map<string, { raw: string; cred: RuntimeCredential; at: number }>();
  /** Sandboxes whose credential is being read again behind a call, and since when. */
  private readonly rereading = new Map<string, number>();

  constructor(private readonly services: GatewayServices) {}

  /**
   * Records the runtime credential from an upstream sandbox detail; a detail without a token forgets it. `reuse`: a
   * detail a client asked for (not a renewal) leaves a kept credential that still serves in place, unwritten.
   */
  async keep(record: unknown, opts: { reuse?: boolean } = {}): Promise<RuntimeCredential | undefined> {
    const detail = readWire(SandboxDetail, record);
    const id = String(detail.id);
    const token = typeof detail.token === "string" && detail.token ? detail.token : undefined;
    const baseUrl = detail.runtime?.baseUrl;
    const closed = SANDBOX_ENDED.has(detail.status ?? "");
    if (!token || closed || typeof baseUrl !== "string") {
      await this.forget(id);
      if (closed) await this.services.stores.ownership.setActive("sandbox", id, false);
      return undefined;
    }
    if (!this.services.upstream.isAllowedUrl(baseUrl)) {
      // The host is named for the operator, in the log (never to the tenant: upstream hosts stay the gateway's); add
      // it to upstream.allowedHosts if it is the upstream's own.
      const host = hostOf(baseUrl);
      this.services.logger.error("sandbox.runtime.refused", {
        sandbox: id,
        host,
        reason: `runtime host ${host} not in upstream.allowedHosts`,
      });
      throw new GatewayError(
        502,
        "upstream_url_refused",
        `The upstream named a runtime host the gateway is not configured to follow (upstream.allowedHosts; the gateway's log names the host).`,
      );
    }
    const now = this.services.now();
    const parsed = Date.parse(detail.tokenExpiresAt ?? "");
    const expiresAt = Number.isFinite(parsed) ? parsed : now + 60_000;
    const cred: RuntimeCredential = { token, baseUrl, host: detail.runtime?.host ?? undefined, expiresAt, receivedAt: now };
    if (expiresAt > now) {
      // A control read hands back a credential while the one the shared store holds (this instance stored it or read
      // it there lately) is the same, or for the same runtime and not yet due for renewal (the upstream signs a new
      // token per detail; the kept one stays valid to its expiry): nothing to write, no round trip. Were it gone from
      // the store meanwhile (forgotten or replaced by another instance), a runtime call finds that out and renews.
      const seen = this.parsed.get(id);
      if (opts.reuse && seen && now - seen.at < UNCHANGED_KEPT_MS && stillServes(seen.cred, cred, now)) return { ...seen.cred };
      const raw = JSON.stringify(cred);
      await this.services.stores.kv.set(stateKeys.sandboxRuntime(id), raw, expiresAt - now);
      this.remember(id, raw, { ...cred }, now);
    }
    return cred;
  }

  async forget(id: string): Promise<void> {
    this.parsed.delete(id);
    await this.services.stores.kv.delete(stateKeys.sandboxRuntime(id));
  }

  async peek(id: string): Promise<RuntimeCredential | undefined> {
    const now = this.services.now();
    return this.kept(id, now) ?? this.readShared(id, now);
  }

  /**
   * The credential this instance keeps for `id` when it may be used without a read of the shared store (the hot
   * path: no promise, no await), else undefined (peek reads the store).
   */
  private kept(id: string, now: number): RuntimeCredential | undefined {
    const seen = this.parsed.get(id);
    if (!seen) return undefined;
    // Read from the shared store at most once a second per sandbox on the hot path (a Redis or Durable Object round
    // trip); a credential this instance keeps, renews or forgets is seen at once.
    if (now - seen.at < SHARED_READ_FRESH_MS) return { ...seen.cred };
    // Older, but not due for renewal: used now and read again behind the call (a runtime call waits for no state). A
    // credential another instance renewed meanwhile leaves this one valid to its expiry; one forgotten (the sandbox
    // ended) makes the upstream refuse the call, as it would have.
    if (now - seen.at < UNCHANGED_KEPT_MS && !needsRenewal(seen.cred, now)) {
      if (!this.rereading.has(id) || now - this.rereading.get(id)! > UNCHANGED_KEPT_MS) {
        if (this.rereading.size >= 10_000) this.rereading.clear();
        this.rereading.set(id, now);
        this.readShared(id, now).then(
          () => this.rereading.delete(id),
          () => this.rereading.delete(id),
        );
      }
      return { ...seen.cred };
    }
    return undefined;
  }

  /**
   * A usable credential this instance keeps, not due for renewal, returned as it is (no promise): what `current` would
   * resolve to without a state read; undefined when `current` has work to do.
   */
  usableNow(id: string): RuntimeCredential | undefined {
    const now = this.services.now();
    const cred = this.kept(id, now);
    return cred && !needsRenewal(cred, now) ? cred : undefined;
  }

  /** The credential the shared store holds now (remembered for the next calls). */
  private async readShared(id: string, now: number): Promise<RuntimeCredential | undefined> {
    const seen = this.parsed.get(id);
    const raw = await this.services.stores.kv.get(stateKeys.sandboxRuntime(id));
    if (!raw) {
      this.parsed.delete(id);
      return undefined;
    }
    if (seen?.raw === raw) {
      seen.at = now;
      return { ...seen.cred };
    }
    const cred = JSON.parse(raw) as RuntimeCredential;
    this.remember(id, raw, cred, now);
    return { ...cred };
  }

  private remember(id: string, raw: string, cred: RuntimeCredential, at: number): void {
    if (this.parsed.size >= 10_000) this.parsed.clear();
    this.parsed.set(id, { raw, cred, at });
  }

  /** A usable credential: the kept one, or a renewed one when it is missing or about to expire. */
  async current(c: Context<GatewayEnv>, id: string): Promise<RuntimeCredential> {
    const cred = await this.peek(id);
    if (cred && !needsRenewal(cred, this.services.now())) return cred;
    return this.renew(c, id);
  }

  /** Fetches a fresh runtime token (`GET /api/sandbox/<id>` with the API key); concurrent callers share one call. */
  renew(c: Context<GatewayEnv>, id: string): Promise<RuntimeCredential> {
    // Workers (sharedWaits false): each request renews on its own call; workerd may cancel a wait on another request's I/O.
    if (!this.services.sharedWaits) return this.fetchFresh(c, id);
    let p = this.inflight.get(id);
    if (!p) {
      p = this.fetchFresh(c, id).finally(() => this.inflight.delete(id));
      this.inflight.set(id, p);
    }
    return p;
  }

  private async fetchFresh(c: Context<GatewayEnv>, id: string): Promise<RuntimeCredential> {
    // Detached from the calling client's abort signal: other requests may be waiting on this renewal.
    const res = await this.services.upstream.call(c, {
      method: "GET",
      path: `/api/sandbox/${encodeURIComponent(id)}`,
      detachFromClient: true,
    });
    if (res.status === 404) {
      await res.body?.cancel();
      throw sandboxNotFound(id);
    }
    if (!res.ok) {
      await res.body?.cancel();
      throw new GatewayError(
        502,
        "runtime_token_renewal_failed",
        `The upstream refused to renew the runtime token (status ${res.status}); try again shortly.`,
      );
    }
    const cred = await this.keep(await upstreamJson(res));
    if (!cred) throw sandboxNotRunning();
    this.services.logger.debug("sandbox.runtime.renewed", { sandbox: id });
    return cred;
  }
}

/** The one custody per gateway (services.custody, built by createGateway), shared by the control, runtime and port routes. */
export function sandboxCustody(services: Pick<GatewayServices, "custody">): RuntimeCustody {
  return services.custody;
}

/** The host (and port) of a URL an upstream handed out, for naming it; "(not a URL)" otherwise. */
function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(not a URL)";
  }
}
