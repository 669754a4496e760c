// The live view on the Worker entry inside workerd: the page, and its CDP socket bridged (not handed through) so every
// viewer message is screened; revoking the ticket closes the bridge.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/host/worker.js";

const stack = inject("stack");
const ctx = { waitUntil() {}, passThroughOnException() {} };

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

type Socket = WebSocket & { accept(): void };

describe("the Worker serves the live view", () => {
  it("serves the page, screens the socket, draws screencast frames, and closes on revocation", async () => {
    const key = `tg_worker_${crypto.randomUUID()}`;
    const e = {
      ...(env as Record<string, unknown>),
      TOLLGATE_CONFIG: JSON.stringify({
        server: { logLevel: "error", publicOrigin: "https://gateway.test" },
        upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.controlUrl).host] },
        payments: { enabled: false },
        state: { backend: "durable-objects" },
        liveView: { frameAncestors: ["https://app.example.com"] },
        tenants: [{ id: `live-${crypto.randomUUID().slice(0, 8)}`, keys: [{ hash: await sha256(key) }] }],
      }),
      TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
      TOLLGATE_TOKEN_SECRET: "r".repeat(40),
    };
    const call = (path: string, init: RequestInit = {}) => worker.fetch(new Request(`https://gateway.test${path}`, init), e as any, ctx);

    const created = await call("/api/session", {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: "{}",
    });
    expect(created.status).toBe(200);
    const session = (await created.json()) as { id: string; liveUrl: string };
    expect(session.liveUrl).toMatch(new RegExp(`^https://gateway.test/_tollgate/live/${session.id}\\?ticket=eyJ`));
    const live = new URL(session.liveUrl);
    try {
      const page = await call(`${live.pathname}${live.search}`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-security-policy")).toContain("frame-ancestors https://app.example.com");
      await page.text();

      const res = await call(`${live.pathname}/ws${live.search}`, { headers: { Upgrade: "websocket" } });
      expect(res.status).toBe(101);
      const ws = (res as Response & { webSocket: Socket | null }).webSocket!;
      ws.accept();
      const waiting = new Map<number, (m: any) => void>();
      let frames = 0;
      let closed: (code: number) => void = () => {};
      const closedWith = new Promise<number>((r) => (closed = r));
      ws.addEventListener("close", (ev: CloseEvent) => closed(ev.code));
      ws.addEventListener("message", (m: MessageEvent) => {
        const msg = JSON.parse(String(m.data));
        if (typeof msg.id === "number" && waiting.has(msg.id)) return waiting.get(msg.id)!(msg);
        if (msg.method === "Page.screencastFrame") frames++;
      });
      let n = 0;
      const send = (method: string, params = {}, sessionId?: string) =>
        new Promise<any>((r) => {
          const id = ++n;
          waiting.set(id, r);
          ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
        });

      expect(await send("Runtime.evaluate", { expression: "1" })).toMatchObject({
        error: { message: "Runtime.evaluate is not allowed in the live view." },
      });
      const targets = (await send("Target.getTargets")).result.targetInfos as Array<{ type: string; targetId: string }>;
      const target = targets.find((t) => t.type === "page")!;
      const attached = (await send("Target.attachToTarget", { targetId: target.targetId, flatten: true })).result.sessionId;
      await send("Page.startScreencast", { format: "jpeg" }, attached);
      const until = Date.now() + 15_000;
      while (frames === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
      expect(frames).toBeGreaterThan(0);

      const revoked = await call("/_tollgate/tokens/revoke", {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify({ token: live.searchParams.get("ticket") }),
      });
      expect(revoked.status).toBe(200);
      const code = await Promise.race([closedWith, new Promise<number>((r) => setTimeout(() => r(-1), 10_000))]);
      expect(code).toBe(4401);
    } finally {
      await call(`/api/session/${session.id}/stop`, { method: "PUT", headers: { "x-api-key": key } });
    }
  });
});
