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
}

export class TenantSync {
  private checkedAt = 0;
  private version = -1;
  private inflight: Promise<void> | undefined;
  private seeded: Promise<void> | undefined;
  private readonly pollMs: number;
  private readonly maxStaleMs: number;

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

  /** Writes the config file's tenants into the store (an API-made record wins; see TenantStore.seed). */
  private seed(): Promise<void> {
    this.seeded ??= (async () => {
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
    })().catch((err) => {
      this.seeded = undefined; // try again on the next check; the config snapshot serves meanwhile
      throw err;
    });
    return this.seeded;
  }

  /** Reloads the snapshot if the store changed since the last check. */
  refresh(): Promise<void> {
    this.inflight ??= (async () => {
      try {
        await this.seed();
        let v = await this.store.version();
        if (v < this.version) {
          // The counter went back: the store lost its records (a Redis restarted without persistence). The config
          // file's tenants are seeded again before the snapshot is replaced, so they never vanish with it.
          this.logger.error("tenant store lost its records; seeding the config tenants again", { version: v, was: this.version });
          this.seeded = undefined;
          await this.seed();
          v = await this.store.version();
        }
        if (v !== this.version) {
          const records = await this.store.list();
          this.directory.replace(records.filter((r) => !r.deleted).map((r) => r.tenant));
          this.version = v;
        }
        this.checkedAt = this.now();
      } catch (err) {
        this.logger.error("tenant store unreachable; serving the last known tenants", { error: String((err as Error)?.message ?? err) });
        this.checkedAt = this.now(); // do not hammer a store that is down: the next check after pollMs
      } finally {
        this.inflight = undefined;
      }
    })();
    return this.inflight;
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
    return this.now() - this.checkedAt >= this.maxStaleMs ? this.refresh() : undefined;
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
