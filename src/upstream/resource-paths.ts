// The owned resource an upstream path addresses (a session, a sandbox, a job...): where a call's account is its
// resource's (accounts.ts, the custody records).
import type { ResourceKind } from "../state/types.js";

/** Upstream paths that address one owned resource, with its kind: where a call's account is its resource's. */
const PATH_KINDS: Array<[RegExp, ResourceKind]> = [
  [/^\/api\/session\/([^/?#]+)/, "session"],
  [/^\/api\/sandbox\/([^/?#]+)/, "sandbox"],
  [/^\/api\/profile\/([^/?#]+)/, "profile"],
  [/^\/api\/volume\/([^/?#]+)/, "volume"],
  [/^\/api\/snapshots\/([^/?#]+)/, "snapshot"],
  [/^\/api\/task\/[^/?#]+\/([^/?#]+)/, "task"],
  [/^\/api\/(?:scrape\/batch|web\/batch-fetch|web\/crawl|scrape|crawl|extract)\/([^/?#]+)/, "job"],
];

/** The resource an upstream path addresses, if it addresses one. */
export function resourceOfPath(path: string): { kind: ResourceKind; id: string } | undefined {
  for (const [re, kind] of PATH_KINDS) {
    const m = re.exec(path);
    if (m) {
      try {
        return { kind, id: decodeURIComponent(m[1]!) };
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}
