// The live view page's HTML: one <img> redrawn from Page.screencastFrame, mouse and keys sent back as Input.dispatch*.
// Self-contained (no external script or style, a CSP nonce on both) so it works framed and behind a strict policy.

const SCRIPT = String.raw`
(() => {
  const img = document.getElementById("screen");
  const status = document.getElementById("status");
  const interactive = document.body.dataset.interactive === "true";
  const url = new URL(location.href);
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  url.pathname = url.pathname.replace(/\/+$/, "") + "/ws";
  const ws = new WebSocket(url.toString());
  let nextId = 1;
  const pending = new Map();
  let page = null;
  let meta = null;
  let frames = 0;
  const say = (state, text) => {
    document.body.dataset.state = state;
    status.textContent = text;
  };
  const send = (method, params, sessionId) =>
    new Promise((resolve, reject) => {
      if (ws.readyState !== WebSocket.OPEN) return reject(new Error("closed"));
      const id = nextId++;
      pending.set(id, { resolve, reject });
      ws.send(JSON.stringify(sessionId ? { id, method, params: params || {}, sessionId } : { id, method, params: params || {} }));
    });
  const input = (method, params) => {
    if (interactive && page) send(method, params, page).catch(() => {});
  };

  async function attach() {
    const { targetInfos } = await send("Target.getTargets");
    const pages = targetInfos.filter((t) => t.type === "page");
    const shown = pages.filter((t) => t.url !== "about:blank");
    const target = (shown.length ? shown : pages).at(-1);
    if (!target) return say("waiting", "No tab open yet");
    const { sessionId } = await send("Target.attachToTarget", { targetId: target.targetId, flatten: true });
    page = sessionId;
    await send("Page.startScreencast", { format: "jpeg", quality: 70, maxWidth: 1920, maxHeight: 1080 }, sessionId);
    say("live", interactive ? "Live" : "Live (view only)");
  }

  ws.onopen = () => attach().catch((e) => say("error", "Could not start the live view: " + e.message));
  ws.onmessage = (e) => {
    const m = JSON.parse(e.data);
    if (m.id !== undefined && pending.has(m.id)) {
      const p = pending.get(m.id);
      pending.delete(m.id);
      return m.error ? p.reject(new Error(m.error.message)) : p.resolve(m.result);
    }
    if (m.method === "Page.screencastFrame" && m.sessionId === page) {
      img.src = "data:image/jpeg;base64," + m.params.data;
      meta = m.params.metadata;
      document.body.dataset.frames = String(++frames);
      send("Page.screencastFrameAck", { sessionId: m.params.sessionId }, page).catch(() => {});
    } else if (m.method === "Target.detachedFromTarget" && m.params.sessionId === page) {
      page = null;
      attach().catch(() => {});
    }
  };
  ws.onclose = (e) => {
    page = null;
    for (const p of pending.values()) p.reject(new Error("closed"));
    pending.clear();
    say("closed", e.code === 4401 ? "This live view link was revoked or has expired." : "The live view has ended.");
  };

  const point = (e) => {
    const r = img.getBoundingClientRect();
    const w = (meta && meta.deviceWidth) || img.naturalWidth;
    const h = (meta && meta.deviceHeight) || img.naturalHeight;
    return { x: ((e.clientX - r.left) / r.width) * w, y: ((e.clientY - r.top) / r.height) * h };
  };
  const modifiers = (e) => (e.altKey ? 1 : 0) | (e.ctrlKey ? 2 : 0) | (e.metaKey ? 4 : 0) | (e.shiftKey ? 8 : 0);
  const BUTTONS = ["left", "middle", "right"];
  const mouse = (type) => (e) => {
    e.preventDefault();
    if (type === "mousePressed") img.focus();
    const { x, y } = point(e);
    input("Input.dispatchMouseEvent", {
      type, x, y, modifiers: modifiers(e),
      button: type === "mouseMoved" ? (e.buttons & 1 ? "left" : "none") : BUTTONS[e.button] || "left",
      buttons: e.buttons, clickCount: type === "mouseMoved" ? 0 : e.detail || 1,
    });
  };
  if (interactive) {
    img.addEventListener("mousedown", mouse("mousePressed"));
    img.addEventListener("mouseup", mouse("mouseReleased"));
    let lastMove = 0;
    img.addEventListener("mousemove", (e) => {
      if (performance.now() - lastMove < 50) return;
      lastMove = performance.now();
      mouse("mouseMoved")(e);
    });
    img.addEventListener("contextmenu", (e) => e.preventDefault());
    img.addEventListener("wheel", (e) => {
      e.preventDefault();
      const { x, y } = point(e);
      input("Input.dispatchMouseEvent", { type: "mouseWheel", x, y, deltaX: e.deltaX, deltaY: e.deltaY, modifiers: modifiers(e) });
    }, { passive: false });
    img.addEventListener("keydown", (e) => {
      e.preventDefault();
      const text = e.key === "Enter" ? "\r" : e.key.length === 1 && !e.ctrlKey && !e.metaKey ? e.key : "";
      input("Input.dispatchKeyEvent", {
        type: text ? "keyDown" : "rawKeyDown", key: e.key, code: e.code, text, unmodifiedText: text,
        windowsVirtualKeyCode: e.keyCode, nativeVirtualKeyCode: e.keyCode, modifiers: modifiers(e),
      });
    });
    img.addEventListener("keyup", (e) => {
      e.preventDefault();
      input("Input.dispatchKeyEvent", {
        type: "keyUp", key: e.key, code: e.code, windowsVirtualKeyCode: e.keyCode, nativeVirtualKeyCode: e.keyCode, modifiers: modifiers(e),
      });
    });
    img.addEventListener("paste", (e) => {
      e.preventDefault();
      input("Input.insertText", { text: e.clipboardData.getData("text") });
    });
  }
})();
`;

/** The page for one view: `interactive` false for sessions created with viewOnlyLiveView (the socket enforces it too). */
export function livePage(opts: { nonce: string; interactive: boolean }): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Live view</title>
<style nonce="${opts.nonce}">
  html, body { margin: 0; height: 100%; background: #111; color: #ddd; font: 13px system-ui, sans-serif }
  #screen { display: block; max-width: 100%; max-height: calc(100% - 24px); margin: 0 auto; outline: none; user-select: none }
  #screen:focus { box-shadow: 0 0 0 2px #4a8 }
  #status { height: 24px; line-height: 24px; padding: 0 8px }
  body[data-state="closed"] #screen { opacity: 0.4 }
</style></head>
<body data-interactive="${opts.interactive}" data-state="connecting" data-frames="0">
<div id="status">Connecting…</div>
<img id="screen" alt="The session's browser, live" tabindex="0" draggable="false">
<script nonce="${opts.nonce}">${SCRIPT}</script>
</body></html>`;
}
