// What the OAuth server's endpoints share: the services, the oauth config, the store, the public origin, the
// resources a token may be for, and the wrapper that answers OAuth errors in OAuth's shape.
import type { Context } from "hono";
import type { GatewayEnv } from "../context.js";
import type { GatewayServices } from "../services.js";
import type { RowHandler } from "../routing/handlers.js";
import { publicOriginOf } from "../web/public-origin.js";
import { kvOAuthStore, type OAuthStore } from "../state/oauth.js";
import { OAuthError, oauthErrorResponse } from "./errors.js";

export interface OAuthContext {
  services: GatewayServices;
  config: GatewayServices["config"]["oauth"];
  store: OAuthStore;
  /** The gateway's public origin: the issuer, and the tokens' audience. */
  origin: (c: Context) => string;
  /** The resources a token may be for: the MCP endpoint, or the gateway as a whole (its origin). */
  resourceOk: (c: Context, r: string) => boolean;
  /**
   * Wraps a handler: OAuth errors answer in OAuth's shape, never a 500 for a client's mistake. Readable from any origin
   * (browser-based clients such as the MCP Inspector run the flow in a page; no cookie is involved).
   */
  oauth: (fn: (c: Context<GatewayEnv>) => Promise<Response>) => RowHandler;
}

export function oauthContext(services: GatewayServices): OAuthContext {
  const config = services.config.oauth;
  const store: OAuthStore = kvOAuthStore(services.stores.kv);
  const origin = (c: Context) => publicOriginOf(c, services);
  const resourceOk = (c: Context, r: string) => {
    const o = origin(c);
    return r === `${o}/mcp` || r === o || r === `${o}/`;
  };
  const enabled = () => {
    if (!config.enabled) throw new OAuthError(404, "not_found", "This gateway runs no authorization server (oauth.enabled = false).");
  };

  const oauth: OAuthContext["oauth"] = (fn) => async (c) => {
    let res: Response;
    try {
      enabled();
      res = await fn(c);
    } catch (err) {
      if (!(err instanceof OAuthError)) throw err;
      res = oauthErrorResponse(err);
    }
    res.headers.set("access-control-allow-origin", "*");
    return res;
  };
  return { services, config, store, origin, resourceOk, oauth };
}
