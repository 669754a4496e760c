// Naming and reaching TollgateState Durable Objects (durable-object.ts) from the stores over them (durable-client.ts,
// durable-ownership.ts): a stub per call, location hints, stable shards, transport failures as outages.
import type { TollgateStateStub } from "./durable-object.js";
import { StateUnavailableError } from "./errors.js";

/** The Durable Object namespace binding (`[[durable_objects.bindings]]` in wrangler.toml). */
export interface StateNamespace {
  idFromName(name: string): unknown;
  get(id: unknown, opts?: { locationHint?: string }): TollgateStateStub;
}

/** Where a tenant's objects are created (a Cloudflare location hint such as "weur"), when the config says. */
export type LocationHints = (tenant: string) => string | undefined;

/** FNV-1a: a stable shard for a name, the same in every isolate. */
export function shard(s: string, n: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return (h >>> 0) % n;
}

/** Resolves object names (under an optional namespace) to stubs, and maps transport failures to outages. */
export class Objects {
  constructor(
    private readonly ns: StateNamespace,
    private readonly prefix: string,
    private readonly hints: LocationHints = () => undefined,
  ) {}

  /**
   * A fresh stub per call: stubs are cheap, and the gateway outlives any one request. `near`: the tenant whose location
   * hint applies, for an object of that tenant (the hint only matters when the object is first created).
   */
  async call<T>(name: string, fn: (stub: TollgateStateStub) => Promise<T>, near?: string): Promise<T> {
    try {
      const hint = near === undefined ? undefined : this.hints(near);
      const id = this.ns.idFromName(this.prefix + name);
      return await fn(hint ? this.ns.get(id, { locationHint: hint }) : this.ns.get(id));
    } catch (err) {
      throw new StateUnavailableError(
        `Durable Object "${name}" is unavailable (${(err as Error)?.message ?? err}); the operation may not have been applied`,
        { cause: err },
      );
    }
  }
}
