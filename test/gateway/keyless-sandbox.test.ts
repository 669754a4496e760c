// Keyless access to one sandbox: tokens minted for its terminal or its auth port work with no key, and nothing else.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import { gatewayCall, portCall, startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";

let s: SandboxStack;
let sbx: Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  s = await startSandboxStack();
  sbx = await s.alice.sandboxes.create({ imageName: "node" });
});
afterAll(async () => {
  await s?.close();
});

async function mint(body: Record<string, unknown>, key = s.keys.alice) {
  const r = await gatewayCall(s, "POST", "/_tollgate/tokens", { headers: { "x-api-key": key }, body: JSON.stringify(body) });
  return r;
}
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Opens the PTY WebSocket through the gateway with a bearer token; resolves with the output seen after `input`. */
function ptyRoundTrip(ptyId: string, token: string, input: string, want: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`ws://127.0.0.1:${s.gw.port}/sandbox/${sbx.id}/pty/${ptyId}/ws?sessionId=${sbx.id}`, {
      headers: { host: `localhost:${s.gw.port}`, ...bearer(token) },
    });
    let seen = "";
    const timer = setTimeout(() => (ws.terminate(), reject(new Error(`no "${want}" in ${JSON.stringify(seen)}`))), 10_000);
    ws.on("open", () => ws.send(JSON.stringify({ type: "input", data: input })));
    ws.on("message", (m) => {
      const f = JSON.parse(String(m));
      if (f.type === "output") seen += Buffer.from(f.data, "base64").toString();
      if (seen.includes(want)) {
        clearTimeout(timer);
        ws.close();
        resolve(seen);
      }
    });
    ws.on("unexpected-response", (_q, res) => (clearTimeout(timer), reject(new Error(`refused ${res.statusCode}`))));
    ws.on("error", () => {});
  });
}

describe("keyless sandbox tokens", () => {
  it("mints a terminal token bound to the sandbox, with the gateway runtime URL", async () => {
    const r = await mint({ kind: "sandbox", sandboxId: sbx.id, scopes: ["terminal"], ttlSeconds: 300 });
    expect(r.status).toBe(201);
    expect(r.json).toMatchObject({
      kind: "sandbox",
      resource: sbx.id,
      scopes: ["terminal"],
      runtime: { baseUrl: `${s.gatewayUrl}/sandbox/${sbx.id}` },
    });
  });

  it("lets a client with only a terminal token open a terminal and type into it, but not exec or read files", async () => {
    const t = (await mint({ kind: "sandbox", sandboxId: sbx.id, scopes: ["terminal"] })).json.token as string;
    const pty = await gatewayCall(s, "POST", `/sandbox/${sbx.id}/pty`, {
      headers: bearer(t),
      body: JSON.stringify({ command: "bash", args: ["--norc", "--noprofile"] }),
    });
    expect(pty.status).toBe(200);
    expect(await ptyRoundTrip(pty.json.pty.id, t, "echo keyless-$((6*7))\r", "keyless-42\r\n")).toContain("keyless-42");
    const exec = await gatewayCall(s, "POST", `/sandbox/${sbx.id}/exec`, { headers: bearer(t), body: JSON.stringify({ command: "id" }) });
    expect(exec.status).toBe(403);
    expect(exec.json).toMatchObject({ code: "token_scope", requiredScope: "runtime" });
    const control = await gatewayCall(s, "GET", `/api/sandbox/${sbx.id}`, { headers: bearer(t) });
    expect(control.status).toBe(401);
  });

  it("lets a ports token reach an auth:true port, and a terminal token not", async () => {
    const server = `require("http").createServer((q,r)=>r.end("port-ok")).listen(3002)`;
    await sbx.processes.start(`node -e '${server}'`);
    const e = await sbx.expose({ port: 3002, auth: true });
    const ports = (await mint({ kind: "sandbox", sandboxId: sbx.id, scopes: ["ports"] })).json.token as string;
    const terminal = (await mint({ kind: "sandbox", sandboxId: sbx.id, scopes: ["terminal"] })).json.token as string;
    let res = await portCall(s, e.url, { headers: bearer(ports) });
    for (let i = 0; i < 40 && res.status !== 200; i++) await sleep(100), (res = await portCall(s, e.url, { headers: bearer(ports) }));
    expect(res.status).toBe(200);
    expect(res.text).toBe("port-ok");
    expect((await portCall(s, e.url, { headers: bearer(terminal) })).status).toBeGreaterThanOrEqual(401);
    expect((await portCall(s, e.url, { headers: bearer(terminal) })).status).toBeLessThanOrEqual(403);
  });

  it("stops a revoked terminal token at once", async () => {
    const m = (await mint({ kind: "sandbox", sandboxId: sbx.id, scopes: ["terminal", "runtime"] })).json;
    const ok = await gatewayCall(s, "POST", `/sandbox/${sbx.id}/exec`, {
      headers: bearer(m.token),
      body: JSON.stringify({ command: "true" }),
    });
    expect(ok.status).toBe(200);
    const del = await gatewayCall(s, "DELETE", `/_tollgate/tokens/${m.jti}`, { headers: { "x-api-key": s.keys.alice } });
    expect(del.json).toEqual({ revoked: true, jti: m.jti });
    const after = await gatewayCall(s, "POST", `/sandbox/${sbx.id}/exec`, {
      headers: bearer(m.token),
      body: JSON.stringify({ command: "true" }),
    });
    expect(after.status).toBe(401);
    expect(after.json.code).toBe("token_revoked");
  });

  it("refuses to mint for another tenant's sandbox", async () => {
    const r = await mint({ kind: "sandbox", sandboxId: sbx.id, scopes: ["terminal"] }, s.keys.bob);
    expect(r.status).toBe(404);
  });
});
