// Graceful drain of `tollgate start`: on SIGTERM new connections are refused, in-flight requests finish (up to
// server.drainSeconds), WebSockets close with 1001, then the process exits; a second signal exits at once.
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { request } from "undici";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { startGatewayProcess, type GatewayProcess } from "../helpers/gateway-process.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";

let emu: EmulatorHandle;
let key: string;
const procs: GatewayProcess[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  emu = await startEmulator({ modules: ["sandboxes"] });
  key = generateTenantKey();
});
afterAll(async () => {
  for (const p of procs) await p.kill();
  await emu?.close();
});

async function startGateway(server: Record<string, unknown> = {}) {
  const runtimePort = new URL(emu.runtimeUrl).port;
  const gw = await startGatewayProcess(
    {
      server: { host: "127.0.0.1", port: 0, logLevel: "error", ...server },
      upstream: { baseUrl: emu.controlUrl, allowedHosts: [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`] },
      tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }], scopes: ["sandboxes"] }],
    },
    { TOLLGATE_UPSTREAM_API_KEY: emu.apiKey, TOLLGATE_TOKEN_SECRET: "d".repeat(40) },
  );
  procs.push(gw);
  const client = new Hyperbrowser({ apiKey: key, baseUrl: gw.url });
  const sbx = await client.sandboxes.create({ imageName: "node" });
  return { gw, client, sbx, port: Number(new URL(gw.url).port) };
}

/** Whether a TCP connection to the port is accepted (false: refused). */
const accepts = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, "127.0.0.1", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });

/** Opens a PTY WebSocket through the gateway; resolves with the socket once open, and the close code it later gets. */
async function openTerminal(gwUrl: string, sbxId: string): Promise<{ ws: WebSocket; closeCode: Promise<number> }> {
  const detail = await request(`${gwUrl}/api/sandbox/${sbxId}`, { headers: { "x-api-key": key } });
  const token = ((await detail.body.json()) as any).token as string;
  const pty = await request(`${gwUrl}/sandbox/${sbxId}/pty`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ command: "bash", args: ["--norc", "--noprofile"] }),
  });
  const ptyId = ((await pty.body.json()) as any).pty.id;
  const ws = new WebSocket(`${gwUrl.replace("http", "ws")}/sandbox/${sbxId}/pty/${ptyId}/ws?sessionId=${sbxId}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const closeCode = new Promise<number>((r) => ws.once("close", (code) => r(code)));
  ws.on("error", () => {});
  await new Promise<void>((resolve, reject) => {
    ws.once("open", () => resolve());
    ws.once("unexpected-response", (_q, res) => reject(new Error(`refused ${res.statusCode}`)));
  });
  return { ws, closeCode };
}

describe("SIGTERM", () => {
  it("refuses new connections, lets the exec in flight finish, closes WebSockets with 1001, then exits 0", async () => {
    const { gw, sbx, port } = await startGateway();
    const terminal = await openTerminal(gw.url, sbx.id);
    const started = Date.now();
    const exec = sbx.exec("sleep 2; echo finished");
    await sleep(500); // the exec is now waiting on the upstream, inside the gateway
    gw.signal("SIGTERM");
    expect(await terminal.closeCode).toBe(1001);
    await sleep(100);
    expect(await accepts(port)).toBe(false);
    const result = await exec;
    expect(result.stdout).toBe("finished\n");
    expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
    expect((await gw.exited).code).toBe(0);
    expect(gw.output()).toMatch(/drained: 1 of 1 in-flight requests finished, 0 cut, 1 WebSockets closed \(1001\)/);
  });

  it("cuts what is still running at server.drainSeconds and exits anyway", async () => {
    const { gw, sbx } = await startGateway({ drainSeconds: 1 });
    const exec = sbx.exec("sleep 6; echo never").then(
      () => "finished",
      () => "cut",
    );
    await sleep(500);
    const signalled = Date.now();
    gw.signal("SIGTERM");
    expect((await gw.exited).code).toBe(0);
    const took = Date.now() - signalled;
    expect(took).toBeGreaterThanOrEqual(900);
    expect(took).toBeLessThan(5000);
    expect(await exec).toBe("cut");
    expect(gw.output()).toMatch(/drained: 0 of 1 in-flight requests finished, 1 cut/);
  });

  it("a second signal exits at once", async () => {
    const { gw, sbx } = await startGateway();
    const exec = sbx.exec("sleep 6; echo never").catch(() => "cut");
    await sleep(500);
    gw.signal("SIGTERM");
    await sleep(300);
    const second = Date.now();
    gw.signal("SIGINT");
    const exit = await gw.exited;
    expect(Date.now() - second).toBeLessThan(1500);
    expect(exit.code).toBe(130);
    expect(await exec).toBe("cut");
  });
});
