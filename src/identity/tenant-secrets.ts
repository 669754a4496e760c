// The tenants' secrets (services.vault): values a tenant's agents use without holding them. A value is sealed at rest
// (./secret-seal.ts) on the shared state (../state/secrets.ts), never answered back (only its rules, when it changed
// and when it was last used), and read from the shared state at each use: a change or a deletion applies fleet-wide
// from the next use. Sandboxes get placeholders bound to the sandbox and the secret (src/sandboxes/secret-env.ts); the
// egress route (src/sandboxes/egress.ts) swaps a placeholder for the value towards the secret's hosts only. Browser
// credential fill reads a value with `valueFor`.
import { LRUCache } from "lru-cache";
import type { StateStores } from "../state/types.js";
import { kvSecretStore, type PlaceholderBinding, type SandboxSource, type SecretRecord, type SecretStore } from "../state/secrets.js";
import { placeholderDigest, SecretSeal } from "./secret-seal.js";

/** Where a secret may go and how it is written: the rules a record keeps beside its sealed value. */
type SecretRules = Pick<SecretRecord, "hosts" | "methods" | "paths" | "header" | "format" | "images" | "snapshots">;

/** What a caller sets (validated by the row's schema: src/routing/admin-schemas.ts, secretPutBody). */
export type SecretInput = SecretRules & { value: string; sandboxes: SecretRecord["sandboxes"] };

/** A secret as answered: everything but its value. */
export type SecretView = SecretRules & {
  name: string;
  sandboxes: SecretRecord["sandboxes"];
  createdAt: string;
  updatedAt: string;
  version: number;
  lastUsedAt: string | null;
};

/** A secret's value with the rules that say where it may go (`valueFor`). */
export type SecretUse = SecretRules & { name: string; value: string };

/** How long a placeholder's binding lasts at most (a sandbox lives less; a stopped one's is refused before). */
const BINDING_TTL_MS = 7 * 86_400_000;
/** A use is recorded at most this often per secret and instance. */
const USE_NOTE_MS = 60_000;

/** The value a process's env gives a secret's name to ask for its placeholder (secrets with `sandboxes: "on-request"`). */
export const SECRET_REQUEST = "tollgate:secret";

/** How long a process start may use a tenant's list of secrets read before (TenantSecrets.lists). */
const LIST_FRESH_MS = 5_000;

/** A secret limited to some images or snapshots. */
const selective = (r: SecretRecord) => !!(r.images || r.snapshots);
/** Whether a sandbox created from `from` (unknown: undefined) is one a selective secret reaches. */
const reaches = (r: SecretRecord, from: SandboxSource | undefined) =>
  !!from &&
  ((from.image !== undefined && !!r.images?.includes(from.image)) ||
    (from.snapshot !== undefined && !!r.snapshots?.includes(from.snapshot)));

export class TenantSecrets {
  readonly store: SecretStore;
  private readonly seal: SecretSeal;
  /** When each secret's use was last written by this instance (bounded by the tenants' secrets). */
  private readonly noted = new Map<string, number>();
  /**
   * Each tenant's secrets as a process start last read them, for LIST_FRESH_MS: an exec waits for no state read of its
   * own (the runtime call's zero round trips). A secret made on another instance reaches new processes within that
   * time; a change or a deletion still takes effect at once where it matters, at the egress (valueFor reads anew).
   */
  // ttlResolution 0: on Workers lru-cache's default 1 ms "now" cache is cleared by a timer that never runs once the
  // request ended, and a list would never be read again (a secret made by another isolate would never reach processes).
  /** What each sandbox was created from (it never changes), as recorded or read. */
  private readonly sources = new LRUCache<string, SandboxSource>({ max: 10_000 });
  private readonly lists = new LRUCache<string, SecretRecord[]>({ max: 10_000, ttl: LIST_FRESH_MS, ttlResolution: 0 });

  constructor(
    stores: Pick<StateStores, "kv">,
    keys: ReadonlyArray<{ kid: string; secret: string }>,
    private readonly now: () => number,
  ) {
    this.store = kvSecretStore(stores.kv);
    this.seal = new SecretSeal(keys);
  }

  /** Creates or replaces a secret; whether it was new. */
  async put(tenant: string, name: string, input: SecretInput): Promise<{ created: boolean; view: SecretView }> {
    const before = await this.store.get(tenant, name);
    const at = this.now();
    const record: SecretRecord = {
      tenant,
      name,
      sealed: await this.seal.seal(tenant, name, input.value),
      hosts: [...new Set(input.hosts)],
      ...(input.methods ? { methods: [...new Set(input.methods)] } : {}),
      ...(input.paths ? { paths: [...new Set(input.paths)] } : {}),
      header: input.header,
      format: input.format,
      sandboxes: input.sandboxes,
      ...(input.images ? { images: [...new Set(input.images)] } : {}),
      ...(input.snapshots ? { snapshots: [...new Set(input.snapshots)] } : {}),
      createdAt: before?.createdAt ?? at,
      updatedAt: at,
      version: (before?.version ?? 0) + 1,
    };
    await this.store.put(record);
    this.lists.delete(tenant);
    return { created: !before, view: await this.view(record) };
  }

  async describe(tenant: string, name: string): Promise<SecretView | undefined> {
    const r = await this.store.get(tenant, name);
    return r ? this.view(r) : undefined;
  }

  async list(tenant: string): Promise<SecretView[]> {
    return Promise.all((await this.store.list(tenant)).map((r) => this.view(r)));
  }

  /** Forgets a secret: its placeholders resolve to nothing from now on, on every instance. */
  async delete(tenant: string, name: string): Promise<SecretView | undefined> {
    const r = await this.store.get(tenant, name);
    if (!r) return undefined;
    await this.store.delete(tenant, name);
    this.lists.delete(tenant);
    return this.view(r);
  }

  /** A secret's value and rules, read anew from the shared state (undefined when the tenant has none by that name). */
  async valueFor(tenant: string, name: string): Promise<SecretUse | undefined> {
    const r = await this.store.get(tenant, name);
    if (!r) return undefined;
    const value = await this.seal.open(tenant, name, r.sealed);
    return {
      name,
      value,
      hosts: r.hosts,
      ...(r.methods ? { methods: r.methods } : {}),
      ...(r.paths ? { paths: r.paths } : {}),
      header: r.header,
      format: r.format,
    };
  }

  /** Records that a secret was used (at most once a minute per instance). */
  async noteUse(tenant: string, name: string): Promise<void> {
    const at = this.now();
    const k = `${tenant}\n${name}`;
    if (at - (this.noted.get(k) ?? 0) < USE_NOTE_MS) return;
    this.noted.set(k, at);
    if (this.noted.size > 10_000) this.noted.clear();
    await this.store.noteUse(tenant, name, at);
  }

  /**
   * The placeholders one process of `sandboxId` gets: NAME → `tg_sec_…` for each of the tenant's secrets that reach it
   * (every `all` one, and the `on-request` ones `requested` names), each bound to the sandbox and the secret.
   */
  async placeholders(tenant: string, sandboxId: string, requested: ReadonlySet<string>): Promise<Record<string, string>> {
    let records = (await this.records(tenant)).filter((r) => r.sandboxes === "all" || requested.has(r.name));
    if (records.some(selective)) {
      const from = await this.sourceOf(sandboxId);
      records = records.filter((r) => !selective(r) || reaches(r, from));
    }
    const out: Record<string, string> = {};
    await Promise.all(
      records.map(async (r) => {
        const placeholder = await this.seal.placeholder(tenant, sandboxId, r.name);
        await this.store.bind(await placeholderDigest(placeholder), { tenant, sandboxId, name: r.name }, BINDING_TTL_MS);
        out[r.name] = placeholder;
      }),
    );
    return out;
  }

  /**
   * The hosts of the tenant's secrets (`host` or `host:port`, sorted, each once): the sandbox's egress floor, what its
   * network deny list gets so that a secret's host is reached through the egress only. From the list a process start
   * reads (up to LIST_FRESH_MS old on an instance that did not make the change).
   */
  async hosts(tenant: string): Promise<string[]> {
    return [...new Set((await this.records(tenant)).flatMap((r) => r.hosts))].sort();
  }

  /** The tenant's secrets as last read, for LIST_FRESH_MS. */
  private async records(tenant: string): Promise<SecretRecord[]> {
    let all = this.lists.get(tenant);
    if (!all) {
      all = await this.store.list(tenant);
      this.lists.set(tenant, all);
    }
    return all;
  }

  /**
   * Records what a sandbox was created from, for the secrets limited to images or snapshots. Awaited (the caller's
   * creation waits for it) when the tenant has such a secret, else written behind the answer: a sandbox whose source is
   * not known gets none of those secrets.
   */
  async noteSource(tenant: string, sandboxId: string, source: SandboxSource): Promise<{ pending?: Promise<void> }> {
    this.sources.set(sandboxId, source);
    const write = this.store.setSource(sandboxId, source, BINDING_TTL_MS);
    if ((await this.records(tenant)).some(selective)) {
      await write;
      return {};
    }
    return { pending: write };
  }

  private async sourceOf(sandboxId: string): Promise<SandboxSource | undefined> {
    let from = this.sources.get(sandboxId);
    if (!from) {
      from = await this.store.source(sandboxId);
      if (from) this.sources.set(sandboxId, from);
    }
    return from;
  }

  /** What a placeholder stands for, when it is one the gateway handed out and still bound. */
  async resolve(placeholder: string): Promise<PlaceholderBinding | undefined> {
    if (!/^tg_sec_[A-Za-z0-9_-]{32}$/.test(placeholder)) return undefined;
    return this.store.binding(await placeholderDigest(placeholder));
  }

  private async view(r: SecretRecord): Promise<SecretView> {
    const used = await this.store.lastUse(r.tenant, r.name);
    return {
      name: r.name,
      hosts: r.hosts,
      ...(r.methods ? { methods: r.methods } : {}),
      ...(r.paths ? { paths: r.paths } : {}),
      header: r.header,
      format: r.format,
      sandboxes: r.sandboxes,
      ...(r.images ? { images: r.images } : {}),
      ...(r.snapshots ? { snapshots: r.snapshots } : {}),
      createdAt: new Date(r.createdAt).toISOString(),
      updatedAt: new Date(r.updatedAt).toISOString(),
      version: r.version,
      lastUsedAt: used === undefined ? null : new Date(used).toISOString(),
    };
  }
}
