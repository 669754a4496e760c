// The CDP guard on the Worker entry inside workerd (docs/cdp-guard.md): the session's CDP socket is bridged, the
// navigation floor closes a page whose script goes to a denied origin, and Tollgate.fillSecret types a tenant secret
// that no message the client receives holds. The emulator's own origin stands in for the pages: 127.0.0.1 is allowed,
// the same server named "localhost" is denied.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/host/worker.js";

const stack = inject("stack");
const ctx = { waitUntil() {}, passThroughOnException() {} };
const SECRET = "w0rker S3cret/+=!";

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

type Socket = WebSocket & { accept(): void };

describe("the Worker guards a session's CDP stream", () => {
  it("closes a page that script takes to a denied origin, and fills a secret the client never receives", async () => {
    const key = `tg_worker_${crypto.randomUUID()}`;
    const port = new URL(stack.controlUrl).port;
    const allowed = `http://127.0.0.1:${port}`;
    const denied = `http://localhost:${port}`;
    const e = {
      ...(env as Record<string, unknown>),
      TOLLGATE_CONFIG: JSON.stringify({
        server: { logLevel: "error", publicOrigin: "https://gateway.test" },
        upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.controlUrl).host] },
        payments: { enabled: false },
        state: { backend: "durable-objects" },
        tenants: [
          {
            id: `cdp-${crypto.randomUUID().slice(0, 8)}`,
            keys: [{ hash: await sha256(key) }],
            policy: { domains: { deny: ["localhost"] } },
          },
        ],
      }),
      TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
      TOLLGATE_TOKEN_SECRET: "r".repeat(40),
    };
    const call = (path: string, init: RequestInit = {}) => worker.fetch(new Request(`https://gateway.test${path}`, init), e as any, ctx);
    const json = { "x-api-key": key, "content-type": "application/json" };
    const put = await call("/_tollgate/secrets/SITE_KEY", {
      method: "PUT",
      headers: json,
      body: JSON.stringify({ value: SECRET, hosts: [`127.0.0.1:${port}`] }),
    });
    expect(put.status).toBeLessThan(300);
    const created = await call("/api/session", { method: "POST", headers: json, body: "{}" });
    expect(created.status).toBe(200);
    const session = (await created.json()) as { id: string; wsEndpoint: string };
    const ws0 = new URL(session.wsEndpoint);
    try {
      const res = await call(`${ws0.pathname}${ws0.search}`, { headers: { Upgrade: "websocket" } });
      expect(res.status).toBe(101);
      const ws = (res as Response & { webSocket: Socket | null }).webSocket!;
      ws.accept();
      const received: string[] = [];
      const waiting = new Map<number, (m: any) => void>();
      const destroyed = new Set<string>();
      ws.addEventListener("message", (m: MessageEvent) => {
        const text = String(m.data);
        received.push(text);
        const msg = JSON.parse(text);
        if (typeof msg.id === "number" && waiting.has(msg.id)) return waiting.get(msg.id)!(msg);
        if (msg.method === "Target.targetDestroyed") destroyed.add(msg.params.targetId);
      });
      let n = 0;
      const send = (method: string, params = {}, sessionId?: string) =>
        new Promise<any>((r) => {
          const id = ++n;
          waiting.set(id, r);
          ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
        });
      const until = async (ok: () => boolean, ms = 15_000) => {
        const end = Date.now() + ms;
        while (!ok() && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
        return ok();
      };
      const openPage = async () => {
        const { targetId } = (await send("Target.createTarget", { url: "about:blank" })).result;
        const sid = (await send("Target.attachToTarget", { targetId, flatten: true })).result.sessionId as string;
        await send("Page.enable", {}, sid);
        await send("Page.navigate", { url: `${allowed}/floor-test` }, sid);
        await until(() => false, 500);
        return { targetId: targetId as string, sid };
      };
      expect((await send("Target.setDiscoverTargets", { discover: true })).result).toEqual({});

      // The floor: page script goes to the denied origin, and the page is closed.
      const a = await openPage();
      await send("Runtime.evaluate", { expression: `location.href = ${JSON.stringify(`${denied}/by-script`)}` }, a.sid);
      expect(await until(() => destroyed.has(a.targetId))).toBe(true);

      // An allowed page stays, and takes a fill on its own origin.
      const b = await openPage();
      await send("Runtime.evaluate", { expression: `document.body.innerHTML = '<input id="pw">'` }, b.sid);
      const filled = await send("Tollgate.fillSecret", { name: "SITE_KEY", selector: "#pw" }, b.sid);
      expect(filled.result).toMatchObject({ filled: true, origin: allowed });
      const read = await send("Runtime.evaluate", { expression: "document.querySelector('#pw').value", returnByValue: true }, b.sid);
      expect(read.result.result.value).toBe("[redacted by tollgate]");
      const shot = await send("Page.captureScreenshot", {}, b.sid);
      expect(shot.error.message).toContain("refused on this page after Tollgate.fillSecret");
      expect(destroyed.has(b.targetId)).toBe(false);
      expect(received.join("\n")).not.toContain(SECRET);
      expect(received.join("\n")).not.toContain(encodeURIComponent(SECRET));
      ws.close();
    } finally {
      await call(`/api/session/${session.id}/stop`, { method: "PUT", headers: { "x-api-key": key } });
    }
  });
});
