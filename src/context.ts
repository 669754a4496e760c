// The per-request variables every middleware and route of the gateway shares.
import type { Tenant } from "./tenants.js";

/** Fields the access log writes for a request, filled in along the chain. */
export interface RequestLogFields {
  tenant?: string;
  route?: string;
  /** Atomic units paid upstream for this request. */
  paid?: bigint;
  cache?: string;
  [k: string]: unknown;
}

export type GatewayEnv = {
  Variables: {
    requestId: string;
    tenant: Tenant | undefined;
    logFields: RequestLogFields;
  };
};
