// A sale whose settlement failed after the upstream created what was bought (a sandbox, a browser session): the buyer
// was not charged, so what was created must not run on. It is stopped through the gateway's own stop row, as the
// wallet tenant (so the ownership, the quota slot and the tenant's credit hold end as for any stop), before the buyer
// gets its 402. Nothing here is exposed to clients.
import type { SaleClass } from "../../config/sales-schema.js";
import type { TenantCaller } from "../identity/caller.js";
import { MCP_SCOPES, type McpScope } from "../identity/tokens.js";
import type { GatewayServices } from "../services.js";

/** The stop row of what a creation row made, by the creation row's name. */
const STOP_PATH: Readonly<Record<string, (id: string) => string>> = {
  "sandbox.create": (id) => `/api/sandbox/${encodeURIComponent(id)}/stop`,
  "session.create": (id) => `/api/session/${encodeURIComponent(id)}/stop`,
  "x402.session.create": (id) => `/x402/session/${encodeURIComponent(id)}/stop`,
};

/** How the gateway sends a request to itself (its Hono app's fetch, with the entry's bindings). */
export type SelfFetch = (req: Request) => Promise<Response>;

/** The id of what a creation answer names (`{ id }`; a job's `{ jobId }`), when the sold class creates something. */
export function createdId(cls: SaleClass, body: ArrayBuffer): string | undefined {
  if (cls !== "sandbox" && cls !== "session" && cls !== "jobs") return undefined;
  try {
    const answer = JSON.parse(new TextDecoder().decode(body)) as { id?: unknown; jobId?: unknown };
    const id = cls === "jobs" ? answer.jobId : answer.id;
    return typeof id === "string" && id.length > 0 ? id : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Stops `id`, created by `rowName` for the wallet tenant of `caller` (with a one-minute gateway token of its own that
 * spends nothing, as the buyer's wallet token would). True when the stop row answered 2xx.
 * Never throws: a stop that fails is logged (the resource still ends at its timeout, under the tenant's budget).
 */
export async function stopBought(
  services: GatewayServices,
  self: SelfFetch,
  opts: { rowName: string; id: string; caller: TenantCaller; requestId?: string; origin: string },
): Promise<boolean> {
  const path = STOP_PATH[opts.rowName];
  if (!path) return false;
  const tenant = opts.caller.tenant.id;
  try {
    const { token } = await services.tokens.mint({
      tenant,
      kind: "mcp",
      scopes: opts.caller.tenant.scopes.filter((x): x is McpScope => (MCP_SCOPES as readonly string[]).includes(x)),
      cap: 0n,
      keyless: true,
      ttlSeconds: 60,
    });
    const res = await self(
      new Request(`${opts.origin}${path(opts.id)}`, {
        method: "PUT",
        headers: { authorization: `Bearer ${token}`, ...(opts.requestId ? { "x-request-id": opts.requestId } : {}) },
      }),
    );
    await res.body?.cancel();
    const ok = res.status >= 200 && res.status < 300;
    const fields = { requestId: opts.requestId, tenant, row: opts.rowName, id: opts.id, status: res.status };
    if (ok) services.logger.info("unpaid purchase stopped", fields);
    else services.logger.error("unpaid purchase not stopped", fields);
    return ok;
  } catch (err) {
    services.logger.error("unpaid purchase not stopped", {
      requestId: opts.requestId,
      tenant,
      row: opts.rowName,
      id: opts.id,
      error: String((err as Error)?.message ?? err),
    });
    return false;
  }
}
