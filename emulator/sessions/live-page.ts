// The emulator's own live view (`liveUrl` of a session detail): screencast frames of the session's first tab, read over
// the session's CDP endpoint with the session token in the link. View only; the gateway serves its own, interactive one.
import { Hono } from "hono";
import { verifySessionToken } from "./access-token.js";
import type { EmulatorContext } from "../types.js";
import { SessionError, respondWithError } from "./session-error.js";
import type { BrowserSessions } from "./session-service.js";

const SCRIPT = `
(() => {
  const img = document.getElementById("screen");
  const u = new URL(location.href);
  const id = u.pathname.split("/").pop();
  const ws = new WebSocket((u.protocol === "https:" ? "wss://" : "ws://") + u.host + "/devtools/browser/" + id + "?token=" + encodeURIComponent(u.searchParams.get("token") || ""));
  let n = 1, page = null;
  const waiting = new Map();
  const send = (method, params, sessionId) => new Promise((ok) => { const i = n++; waiting.set(i, ok); ws.send(JSON.stringify({ id: i, method, params: params || {}, sessionId })); });
  ws.onopen = async () => {
    const { targetInfos } = await send("Target.getTargets");
    const t = targetInfos.filter((x) => x.type === "page").at(-1);
    if (!t) return;
    page = (await send("Target.attachToTarget", { targetId: t.targetId, flatten: true })).sessionId;
    await send("Page.startScreencast", { format: "jpeg", quality: 60 }, page);
    document.body.dataset.state = "live";
  };
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (waiting.has(m.id)) { waiting.get(m.id)(m.result || {}); waiting.delete(m.id); return; }
    if (m.method === "Page.screencastFrame") {
      img.src = "data:image/jpeg;base64," + m.params.data;
      send("Page.screencastFrameAck", { sessionId: m.params.sessionId }, page);
    }
  };
  ws.onclose = () => { document.body.dataset.state = "closed"; };
})();
`;

export function liveRoutes(ctx: EmulatorContext, sessions: BrowserSessions): Hono {
  const app = new Hono();
  app.onError((err, c) => respondWithError(c, err));
  app.get("/live/:id", async (c) => {
    const id = c.req.param("id");
    if (!sessions.record(id) || !(await verifySessionToken(ctx.tokenSecret, id, c.req.query("token"))))
      throw new SessionError(404, "not_found", `Session ${id} not found`);
    return c.html(
      `<!doctype html><html><head><meta charset="utf-8"><title>Live view</title></head>` +
        `<body data-state="connecting" style="margin:0;background:#111"><img id="screen" alt="live" style="max-width:100%">` +
        `<script>${SCRIPT}</script></body></html>`,
    );
  });
  return app;
}
