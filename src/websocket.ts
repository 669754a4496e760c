// WebSocket relaying behind one small interface: Node relays frames with `ws`, Workers hand the upstream socket through.
import type { Context } from "hono";

interface WebSocketRelayTarget {
  /** ws:// or wss:// URL of the upstream socket (already checked against the allowed hosts). */
  url: string;
  /** Headers for the upstream handshake (e.g. the injected runtime bearer). */
  headers: Record<string, string>;
  /**
   * Re-checked while the connection is open (Node relay): once it answers false (token revoked or expired), both
   * sides are closed with code 4401. Workers hand the socket through and cannot cut it; there, tokens should be short.
   */
  stillValid?: () => Promise<boolean>;
}

/**
 * Relays the client's WebSocket upgrade at `c` to the upstream target. When the upstream refuses the handshake,
 * its status and JSON error are returned to the client as an ordinary HTTP response.
 */
export type WebSocketRelay = (c: Context, target: WebSocketRelayTarget) => Promise<Response>;

export function isWebSocketUpgrade(req: Request): boolean {
  return (req.headers.get("upgrade") ?? "").toLowerCase() === "websocket";
}

/** Workers: fetch with `Upgrade: websocket` returns a 101 whose socket is handed to the client unchanged. */
export const fetchWebSocketRelay: WebSocketRelay = async (_c, target) => {
  const url = target.url.replace(/^ws/, "http");
  const res = await fetch(url, { headers: { ...target.headers, Upgrade: "websocket" } });
  if (res.status !== 101) {
    const headers = new Headers({ "content-type": res.headers.get("content-type") ?? "application/json" });
    return new Response(res.body, { status: res.status, headers });
  }
  return res;
};
