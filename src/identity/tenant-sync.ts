// Keeps an instance's TenantDirectory in step with the shared TenantStore: config tenants are seeded at start-up,
// then the store's version is checked at most every `pollMs` (started by a request coming in, run beside it) and the
// snapshot reloaded when it moved. A key lookup waits for a check only when the snapshot is older than `maxStaleMs`, so
// a change made anywhere applies everywhere within about that long, with no timer (Workers allow none outside a request).
import type { Context, MiddlewareHandler } from "hono";
import type { TenantConfig } from "../../config/schema.js";
import type { Logger } from "../log.js";
import { withHolds } from "./tenant-holds.js";
import type { TenantDirectory } from "./tenants.js";
import type { TenantStore } from "../state/types.js";

export interface TenantSyncOptions {
  /** A check is started when the snapshot is older than this (default 250 ms). */
  pollMs?: number;
  /** A lookup waits for a check when the snapshot is older than this (default 750 ms). */
  maxStaleMs?: number;
  /**
   * Whether a lookup may wait for a check another request started (default true). false on Workers (GatewayDeps
   * .sharedWaits): workerd may cancel, as hung, a request waiting on another request's I/O, so a lookup there runs a check
   * of its own.
   */
  sharedWaits?: boolean;
}

export class TenantSync {
  private checkedAt = 0;
  private version = -1;
  private inflight: Promise<void> | undefined;
  private seeded: Promise<void> | undefined;
  /** The config tenants are in the store (seeded once per instance). */
  private seedDone = false;
  private readonly pollMs: number;
  private readonly maxStaleMs: number;
  private readonly sharedWaits: boolean;

  constructor(
    private readonly store: TenantStore,
    private readonly directory: TenantDirectory,
    private configTenants: TenantConfig[],
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    opts: TenantSyncOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? 250;
    this.maxStaleMs = opts.maxStaleMs ?? 750;
    this.sharedWaits = opts.sharedWaits ?? true;
  }

  /** The config file those tenants come from (set by the Node entry when it runs with one), as errors name it. */
  fileName: string | undefined;

  /** The tenants of the config file this instance runs with (as last loaded: at start, or by a reload). */
  fileTenants(): TenantConfig[] {
    return this.configTenants;
  }

  /** A reload read the file again: its tenants are seeded from now on (after a store loss, say). */
  setFileTenants(tenants: TenantConfig[]): void {
    this.configTenants = tenants;
  }

  /**
   * Writes the config file's tenants into the store (an API-made record wins; see TenantStore.seed), once; `own`: this
   * caller's own writes rather than a wait on another request's (idempotent: a seed keeps what is there).
   */
  private seed(own = false): Promise<void> {
    if (this.seedDone) return Promise.resolve();
    if (own) return this.seedNow().then(() => void (this.seedDone = true));
    this.seeded ??= this.seedNow().then(
      () => void (this.seedDone = true),
      (err) => {
        this.seeded = undefined; // try again on the next check; the config snapshot serves meanwhile
        throw err;
      },
    );
    return this.seeded;
  }

  private async seedNow(): Promise<void> {
    const at = this.now();
    const kept: TenantConfig[] = [];
    for (const tenant of this.configTenants) {
      if (!(await this.store.seed({ tenant, source: "config", updatedAt: at }))) kept.push(tenant);
    }
    if (!kept.length) return;
    // A file tenant an operator holds (disabled, a key revoked…: ./tenant-holds.ts) takes the file as it is now,
    // with the holds laid over it, so an edit of the file made while the gateway was down applies too.
    const held = new Map((await this.store.list()).filter((r) => r.holds && !r.deleted).map((r) => [r.tenant.id, r]));
    for (const tenant of kept) {
      const r = held.get(tenant.id);
      if (!r) continue;
      const want = withHolds(tenant, r.holds);
      if (JSON.stringify(want) !== JSON.stringify(r.tenant)) await this.store.put({ ...r, tenant: want, updatedAt: at });
    }
  }

  /** Reloads the snapshot if the store changed since the last check (one check in flight, shared by its callers). */
  refresh(): Promise<void> {
    this.inflight ??= this.check(false, true);
    return this.inflight;
  }

  /**
   * One check; `own`: its state calls are its caller's own, never a wait on another request's (see sharedWaits);
   * `shared`: it is the check in flight (refresh), forgotten when done.
   */
  private async check(own: boolean, shared = false): Promise<void> {
    // The version this check compares with: checks running side by side (own ones) never read one another's as a loss.
    const known = this.version;
    try {
      await this.seed(own);
      let v = await this.store.version();
      if (v < known) {
        // The counter went back: the store lost its records (a Redis restarted without persistence). The config
        // file's tenants are seeded again before the snapshot is replaced, so they never vanish with it.
        this.logger.error("tenant store lost its records; seeding the config tenants again", { version: v, was: known });
        this.seeded = undefined;
        this.seedDone = false;
        await this.seed(own);
        v = await this.store.version();
        this.version = -1; // whatever the store holds now replaces the snapshot
      }
      if (v > this.version) {
        const records = await this.store.list();
        // Another check may have applied a newer version meanwhile: the newest stays.
        if (v > this.version) {
          this.directory.replace(records.filter((r) => !r.deleted).map((r) => r.tenant));
          this.version = v;
        }
      }
      this.checkedAt = this.now();
    } catch (err) {
      this.logger.error("tenant store unreachable; serving the last known tenants", { error: String((err as Error)?.message ?? err) });
      this.checkedAt = this.now(); // do not hammer a store that is down: the next check after pollMs
    } finally {
      if (shared) this.inflight = undefined;
    }
  }

  /**
   * Starts a check when the snapshot is older than `pollMs`: the gateway calls it as each request comes in and keeps
   * the check it returns alive beside that request (services.background), so no caller waits for it.
   */
  poll(): Promise<void> | undefined {
    return this.now() - this.checkedAt < this.pollMs ? undefined : this.refresh();
  }

  /** The directory's refresher, before a key lookup: nothing to wait for while recent enough, a check when stale. */
  fresh(): Promise<void> | undefined {
    if (this.now() - this.checkedAt < this.maxStaleMs) return undefined;
    return this.sharedWaits ? this.refresh() : this.check(true);
  }
}

/**
 * The app-level step that starts the tenant store check when one is due, beside the request: no timer, and no request
 * waits for it (a key lookup waits only when the snapshot is older than maxStaleMs, TenantSync.fresh).
 * @example app.use(pollTenantStore(tenantSync, services.background))
 */
export function pollTenantStore(
  sync: TenantSync,
  background: (c: Context | undefined, work: Promise<unknown>, what: string) => void,
): MiddlewareHandler {
  return function pollTenantStore(c, next) {
    const check = sync.poll();
    if (check) background(c, check, "tenant store check");
    return next();
  };
}
