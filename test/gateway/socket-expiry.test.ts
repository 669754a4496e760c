// An open socket ends at its parent's EXPIRY, as it ends at its revocation (docs/security.md#the-credential-tree): a
// short-lived capped token (POST /_tollgate/tokens, 12 s) creates a session and a sandbox through the unmodified SDK;
// the CDP token (wsEndpoint) and the runtime token it hands out carry its expiry (`pe`), so the open puppeteer-core
// connection and an open terminal WebSocket (ws, the runtime token) are closed by the relay's recheck within 2 s of
// the capped token's expiry, with the revocation's close code (4401). A token read with the tenant key (whose parent
// is the key, which has not expired) keeps its socket open past the same moment.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer from "puppeteer-core";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";

/** The relay rechecks an open socket every 2 s (src/host/node/ws-relay.ts). */
const SOCKET_RECHECK_MS = 2_000;
/** Room for a loaded machine (the recheck's own store reads, the close reaching the client). */
const SLACK_MS = 2_000;
const TTL_SECONDS = 12;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("an open socket closes at its parent's expiry", () => {
  let emu: EmulatorHandle;
  let gw: RunningGateway;
  let base = "";
  const acme = generateTenantKey();
  const figures: string[] = [];

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["sandboxes", "sessions"] });
    const runtimePort = new URL(emu.runtimeUrl).port;
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "error" },
      upstream: {
        baseUrl: emu.controlUrl,
        allowedHosts: [new URL(emu.controlUrl).host, `127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`],
      },
      tenants: [{ id: "acme", scopes: ["sessions", "sandboxes"], keys: [{ hash: await hashTenantKey(acme) }] }],
    });
    gw = await startNodeGateway({ config, secrets: { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") } });
    base = `http://localhost:${gw.port}`;
  }, 120_000);

  afterAll(async () => {
    if (figures.length) console.log(`socket expiry: ${figures.join("; ")}`);
    await gw?.close().catch(() => {});
    await emu?.close();
  });

  /** Opens a terminal on the sandbox with `token` and its WebSocket; resolves once output flows. */
  async function openTerminal(sandboxId: string, token: string): Promise<{ ws: WebSocket; closed: Promise<{ at: number; code: number }> }> {
    const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const pty = await fetch(`${base}/sandbox/${sandboxId}/pty`, {
      method: "POST",
      headers,
      body: JSON.stringify({ command: "bash", args: ["--norc", "--noprofile"] }),
    });
    expect(pty.status).toBe(200);
    const ptyId = (await pty.json()).pty.id as string;
    const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/sandbox/${sandboxId}/pty/${ptyId}/ws?sessionId=${sandboxId}`, {
      headers: { host: `localhost:${gw.port}`, authorization: `Bearer ${token}` },
    });
    const closed = new Promise<{ at: number; code: number }>((resolve) => ws.on("close", (code) => resolve({ at: Date.now(), code })));
    ws.on("error", () => {});
    await new Promise<void>((resolve, reject) => {
      let seen = "";
      const timer = setTimeout(() => reject(new Error(`no output: ${JSON.stringify(seen)}`)), 15_000);
      ws.on("open", () => ws.send(JSON.stringify({ type: "input", data: "echo up-$((6*7))\r" })));
      ws.on("message", (m) => {
        const f = JSON.parse(String(m));
        if (f.type === "output") seen += Buffer.from(f.data, "base64").toString();
        if (seen.includes("up-42")) {
          clearTimeout(timer);
          resolve();
        }
      });
      ws.on("unexpected-response", (_q, res) => (clearTimeout(timer), reject(new Error(`refused ${res.statusCode}`))));
    });
    return { ws, closed };
  }

  it("CDP (puppeteer-core) and a terminal WebSocket read with a 12 s capped token close within the recheck of its expiry; the key's stay open", async () => {
    const minted = await fetch(`${base}/_tollgate/tokens`, {
      method: "POST",
      headers: { "x-api-key": acme, "content-type": "application/json" },
      body: JSON.stringify({ kind: "mcp", scopes: ["sessions", "sandboxes"], cap: "1", ttlSeconds: TTL_SECONDS }),
    });
    expect(minted.status).toBe(201);
    const capped = (await minted.json()) as { token: string; expiresAt: string };
    const expiresAt = Date.parse(capped.expiresAt);
    const sdk = new Hyperbrowser({ apiKey: capped.token, baseUrl: base });
    const byKey = new Hyperbrowser({ apiKey: acme, baseUrl: base });
    const [session, sbx] = await Promise.all([sdk.sessions.create(), sdk.sandboxes.create({ imageName: "node" })]);
    try {
      const detail = await (await fetch(`${base}/api/sandbox/${sbx.id}`, { headers: { authorization: `Bearer ${capped.token}` } })).json();
      const browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
      const cdpClosed = new Promise<number>((resolve) => browser.once("disconnected", () => resolve(Date.now())));
      const terminal = await openTerminal(sbx.id, detail.token);
      // The same session and sandbox read with the key: tokens whose parent (the key) does not expire here.
      const keySession = await byKey.sessions.get(session.id);
      const keyBrowser = await puppeteer.connect({ browserWSEndpoint: keySession.wsEndpoint!, defaultViewport: null });
      let keyBrowserClosed = false;
      keyBrowser.once("disconnected", () => (keyBrowserClosed = true));
      const keyDetail = await (await fetch(`${base}/api/sandbox/${sbx.id}`, { headers: { "x-api-key": acme } })).json();
      const keyTerminal = await openTerminal(sbx.id, keyDetail.token);
      let keyTerminalClosed = false;
      keyTerminal.closed.then(() => (keyTerminalClosed = true));
      expect(Date.now(), "the sockets opened before the capped token expired (a slow machine)").toBeLessThan(expiresAt);
      expect(await browser.version()).toMatch(/Chrome/);

      const wait = expiresAt - Date.now() + SOCKET_RECHECK_MS + SLACK_MS + 3_000;
      const [cdpAt, term] = await Promise.all([
        Promise.race([cdpClosed, sleep(wait).then(() => 0)]),
        Promise.race([terminal.closed, sleep(wait).then(() => ({ at: 0, code: 0 }))]),
      ]);
      expect(cdpAt, "the CDP socket closed").toBeGreaterThan(0);
      expect(term.at, "the terminal closed").toBeGreaterThan(0);
      // Same close as a revocation's.
      expect(term.code).toBe(4401);
      const cdpAfter = cdpAt - expiresAt;
      const termAfter = term.at - expiresAt;
      figures.push(`CDP socket closed ${cdpAfter} ms after its capped token expired, terminal ${termAfter} ms`);
      // Not before the expiry (the token lived): the recheck that closes them runs once it has passed.
      expect(cdpAfter).toBeGreaterThan(-1_000);
      expect(termAfter).toBeGreaterThan(-1_000);
      expect(cdpAfter).toBeLessThan(SOCKET_RECHECK_MS + SLACK_MS);
      expect(termAfter).toBeLessThan(SOCKET_RECHECK_MS + SLACK_MS);

      // The key's sockets: still open, and the key's browser still answers.
      expect(keyBrowserClosed).toBe(false);
      expect(keyTerminalClosed).toBe(false);
      expect(await keyBrowser.version()).toMatch(/Chrome/);
      await keyBrowser.disconnect();
      keyTerminal.ws.close();
      // A new connection with the expired parent's CDP token is refused at the upgrade.
      await expect(puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null })).rejects.toThrow(/401/);
    } finally {
      await Promise.all([byKey.sessions.stop(session.id).catch(() => {}), byKey.sandboxes.stop(sbx.id).catch(() => {})]);
    }
  }, 120_000);
});
