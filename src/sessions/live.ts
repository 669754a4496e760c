// The gateway's live view of a browser session (`liveUrl`): a page drawn from CDP screencast frames relayed through the
// gateway, with mouse and keyboard forwarded as Input.dispatch* (unless the session is view-only). The ticket in the link
// is a gateway token (kind session, scope live, bound to the session); revoking it closes open views within seconds.
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { stateKeys } from "../state/keys.js";
import { liveFor, liveViewer } from "../identity/resources.js";
import { isWebSocketUpgrade } from "../web/websocket.js";
import { publicOriginOf } from "../web/public-origin.js";
import type { Handlers } from "../routing/handlers.js";
import { whileParentsStand } from "../identity/lineage.js";
import { allowedUpstreamUrl } from "./cdp.js";
import { livePage } from "./live-page.js";
import { notFoundSession, sessionEndpoints } from "./access.js";

/** What a viewer may send: enough to find the page, attach, and receive frames. Nothing that reads or runs page code. */
const VIEW_METHODS = new Set([
  "Target.getTargets",
  "Target.setDiscoverTargets",
  "Target.attachToTarget",
  "Target.detachFromTarget",
  "Page.startScreencast",
  "Page.stopScreencast",
  "Page.screencastFrameAck",
]);
/** What an interactive viewer may send on top: the human's mouse, wheel, keys and pasted text. */
const INPUT_METHODS = new Set(["Input.dispatchMouseEvent", "Input.dispatchKeyEvent", "Input.insertText"]);
/** A CDP command is a few hundred bytes; a pasted text can be longer, not megabytes. */
const MAX_VIEWER_MESSAGE = 64 * 1024;

interface CdpCommand {
  id?: unknown;
  method?: unknown;
  params?: { flatten?: unknown } | null;
  sessionId?: unknown;
}

/**
 * The live view's screen on the CDP relay: allowed commands pass unchanged, anything else is answered with a CDP error
 * and never reaches the browser. `attachToTarget` must be flattened (the old nested form tunnels arbitrary commands).
 */
export function liveViewScreen(interactive: boolean): (message: string) => { forward: string } | { reply: string } {
  const refuse = (id: unknown, sessionId: unknown, message: string) => ({
    reply: JSON.stringify({
      ...(typeof id === "number" ? { id } : {}),
      ...(typeof sessionId === "string" ? { sessionId } : {}),
      error: { code: -32601, message },
    }),
  });
  return function screenLiveViewMessage(message) {
    if (message.length > MAX_VIEWER_MESSAGE) return refuse(undefined, undefined, "Message too large for the live view.");
    let cmd: CdpCommand;
    try {
      cmd = JSON.parse(message) as CdpCommand;
    } catch {
      return refuse(undefined, undefined, "Expected a CDP command (JSON).");
    }
    if (!cmd || typeof cmd !== "object" || typeof cmd.method !== "string" || typeof cmd.id !== "number")
      return refuse(cmd?.id, cmd?.sessionId, "Expected a CDP command with a numeric id and a method.");
    const allowed = VIEW_METHODS.has(cmd.method) || (interactive && INPUT_METHODS.has(cmd.method));
    if (!allowed)
      return refuse(
        cmd.id,
        cmd.sessionId,
        INPUT_METHODS.has(cmd.method) ? "This live view is view-only." : `${cmd.method} is not allowed in the live view.`,
      );
    if (cmd.method === "Target.attachToTarget" && cmd.params?.flatten !== true)
      return refuse(cmd.id, cmd.sessionId, "Target.attachToTarget needs flatten: true in the live view.");
    return { forward: message };
  };
}

async function isViewOnly(services: GatewayServices, id: string): Promise<boolean> {
  return (await services.stores.kv.get(stateKeys.sessionViewOnly(id))) !== undefined;
}

/** `frame-ancestors` from config `liveView.frameAncestors`: only the operator's origins may frame the live view. */
function frameAncestors(services: GatewayServices): string {
  const origins = services.config.liveView.frameAncestors;
  return origins.length > 0 ? origins.join(" ") : "'none'";
}

export function liveHandlers(services: GatewayServices): Handlers {
  return {
    // GET /_tollgate/live/:id?ticket=…: the page. It opens ./ws with the same ticket; nothing upstream is named in it.
    "live.page": async (c) => {
      const id = c.req.param("id")!;
      await liveViewer(services, c, id, () => notFoundSession(id));
      const nonce = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(18))));
      const wsOrigin = publicOriginOf(c, services).replace(/^http/, "ws");
      const csp = [
        "default-src 'none'",
        `script-src 'nonce-${nonce}'`,
        `style-src 'nonce-${nonce}'`,
        "img-src data:",
        `connect-src 'self' ${wsOrigin}`,
        "base-uri 'none'",
        "form-action 'none'",
        `frame-ancestors ${frameAncestors(services)}`,
      ].join("; ");
      return c.body(livePage({ nonce, interactive: !(await isViewOnly(services, id)) }), 200, {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": csp,
        "cache-control": "no-store",
        "referrer-policy": "no-referrer",
        "x-content-type-options": "nosniff",
      });
    },

    // GET /_tollgate/live/:id/ws?ticket=… (WebSocket): the session's CDP through the gateway, screened to the live view's commands.
    "live.socket": async (c) => {
      const id = c.req.param("id")!;
      const { ticket, tenantId, token } = await liveViewer(services, c, id, () => notFoundSession(id));
      if (!isWebSocketUpgrade(c.req.raw))
        throw new GatewayError(426, "upgrade_required", "This is the live view's WebSocket; open the live view page instead.");
      const url = allowedUpstreamUrl(services, (await sessionEndpoints(c, services, id)).wsEndpoint, "wsEndpoint", id);
      const stands = whileParentsStand(services, ticket, token);
      return services.webSocketRelay(c, {
        url,
        headers: {},
        // Revoking the ticket (or the tenant's tokens, or its key or grant), or the session ending (on any instance),
        // closes the view: the session's record is read again each time, never remembered.
        stillValid: async () => (await stands()) && liveFor(await services.stores.ownership.ownerRecord("session", id), tenantId),
        screen: liveViewScreen(!(await isViewOnly(services, id))),
      });
    },
  };
}
