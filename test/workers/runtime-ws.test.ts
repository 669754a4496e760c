// The Worker entry relaying a sandbox's PTY WebSocket (upstream runtime token injected) inside workerd.
import { env } from "cloudflare:test";
import { describe, expect, inject, it } from "vitest";
import worker from "../../src/host/worker.js";

const stack = inject("stack");
const ctx = { waitUntil() {}, passThroughOnException() {} };

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function gateway() {
  const key = `tg_worker_${crypto.randomUUID()}`;
  const runtimePort = new URL(stack.runtimeUrl).port;
  const e = {
    ...(env as Record<string, unknown>),
    TOLLGATE_CONFIG: JSON.stringify({
      server: { logLevel: "error", publicOrigin: "https://gateway.test" },
      upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.runtimeUrl).host, `localhost:${runtimePort}`] },
      payments: { enabled: false },
      state: { backend: "durable-objects" },
      tenants: [{ id: `ws-${crypto.randomUUID().slice(0, 8)}`, keys: [{ hash: await sha256(key) }] }],
    }),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_TOKEN_SECRET: "r".repeat(40),
  };
  const call = (path: string, init: RequestInit = {}) => worker.fetch(new Request(`https://gateway.test${path}`, init), e as any, ctx);
  return { key, call };
}

async function terminal(call: (path: string, init?: RequestInit) => Response | Promise<Response>, sbx: { id: string }, token: string) {
  const pty = await call(`/sandbox/${sbx.id}/pty`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ command: "bash", args: ["--norc", "--noprofile"], rows: 24, cols: 80 }),
  });
  expect(pty.status).toBe(200);
  const ptyId = ((await pty.json()) as any).pty.id;
  const res = await call(`/sandbox/${sbx.id}/pty/${ptyId}/ws?sessionId=${sbx.id}`, {
    headers: { Upgrade: "websocket", authorization: `Bearer ${token}` },
  });
  expect(res.status).toBe(101);
  // workerd hands the client end of the socket back on the 101 response.
  const ws = (res as Response & { webSocket: (WebSocket & { accept(): void }) | null }).webSocket!;
  ws.accept();
  return { ws, ptyId };
}

describe("the Worker relays sandbox runtime WebSockets", () => {
  it("runs a terminal through the Worker: PTY input in, base64 output frames back", async () => {
    const { key, call } = await gateway();

    const created = await call("/api/sandbox", {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(created.status).toBe(200);
    const sbx = (await created.json()) as any;
    expect(sbx.runtime.baseUrl).toBe(`https://gateway.test/sandbox/${sbx.id}`);
    try {
      const { ws, ptyId } = await terminal(call, sbx, sbx.token);
      let text = "";
      const seen = new Promise<void>((resolve) => {
        ws.addEventListener("message", (m: MessageEvent) => {
          const f = JSON.parse(String(m.data));
          if (f.type === "output") text += atob(f.data);
          if (text.includes("tollgate-in-workerd")) resolve();
        });
      });
      ws.send(JSON.stringify({ type: "input", data: "echo tollgate-in-$((1+0))workerd | tr -d 1\r" }));
      await Promise.race([seen, new Promise((_, rej) => setTimeout(() => rej(new Error(`no output: ${text}`)), 10_000))]);
      expect(text).toContain("tollgate-in-workerd");
      ws.close();

      const refused = await call(`/sandbox/${sbx.id}/pty/${ptyId}/ws?sessionId=${sbx.id}`, {
        headers: { Upgrade: "websocket", authorization: "Bearer eyJub3QiOiJ2YWxpZCJ9.e30.x" },
      });
      expect(refused.status).toBe(401);
    } finally {
      await call(`/api/sandbox/${sbx.id}/stop`, { method: "PUT", headers: { "x-api-key": key } });
    }
  });

  it("closes an open terminal at its parent's expiry (a short capped token): the Worker rechecks every socket it relays", async () => {
    const { key, call } = await gateway();
    const minted = await call("/_tollgate/tokens", {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({ kind: "mcp", scopes: ["sandboxes"], cap: "1", ttlSeconds: 8 }),
    });
    expect(minted.status).toBe(201);
    const capped = (await minted.json()) as { token: string; expiresAt: string };
    const created = await call("/api/sandbox", {
      method: "POST",
      headers: { authorization: `Bearer ${capped.token}`, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    });
    expect(created.status).toBe(200);
    const sbx = (await created.json()) as any;
    try {
      const { ws } = await terminal(call, sbx, sbx.token);
      const closed = new Promise<{ code: number; at: number }>((resolve) =>
        ws.addEventListener("close", (e: CloseEvent) => resolve({ code: e.code, at: Date.now() })),
      );
      const timeout = new Promise<never>((_, rej) => setTimeout(() => rej(new Error("the socket outlived its parent")), 20_000));
      const { code, at } = await Promise.race([closed, timeout]);
      expect(code).toBe(4401);
      // Not before the parent's expiry (a second of clock slack), and within the recheck's bound after it.
      expect(at).toBeGreaterThan(Date.parse(capped.expiresAt) - 1000);
      expect(at - Date.parse(capped.expiresAt)).toBeLessThan(8000);
    } finally {
      await call(`/api/sandbox/${sbx.id}/stop`, { method: "PUT", headers: { "x-api-key": key } });
    }
  }, 40_000);
});
