// The per-request variables every middleware and route of the gateway shares.
import type { Tenant } from "./tenants.js";

/** Fields the access log writes for a request, filled in along the chain. */
export interface RequestLogFields {
  tenant?: string;
  route?: string;
  /** Atomic units paid upstream for this request. */
  paid?: bigint;
  cache?: string;
  /** Atomic units a cached or coalesced answer saved (its price when it was first paid). */
  saved?: bigint;
  /** Time to response headers of the upstream call(s), summed, in ms (src/upstream.ts). */
  upstreamMs?: number;
  /** Bytes sent upstream in request bodies, when known. */
  upstreamBytesOut?: number;
  /** Bytes the upstream announced in its response bodies (Content-Length), when known. */
  upstreamBytesIn?: number;
  [k: string]: unknown;
}

export type GatewayEnv = {
  Variables: {
    requestId: string;
    tenant: Tenant | undefined;
    logFields: RequestLogFields;
  };
};
