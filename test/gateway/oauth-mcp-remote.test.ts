// `mcp-remote` (the stdio bridge Claude Desktop runs for a remote MCP server) connecting to /mcp with no header: it
// finds the gateway's authorization server, registers itself, and opens the consent page "in a browser": its opener
// (xdg-open, through $BROWSER) is a script that hands the URL to this test, which drives the page in headless Chromium
// (sign in with the tenant key, pick scopes, cap and expiry, Allow). Chromium follows the redirect to mcp-remote's own
// callback server; mcp-remote exchanges the code (PKCE) and the test, speaking MCP over its stdio, lists and calls tools.
import { chmod, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { chromium, type Browser } from "playwright-core";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { freePort } from "../helpers/free-port.js";

let stack: SessionGateway;
let dir: string;
let browser: Browser | undefined;
let client: Client | undefined;
/** The gateway's clock runs this far ahead of the real one (an access token's expiry without waiting for it). */
let ahead = 0;
/** What the first test leaves for the second: mcp-remote's callback port and the client it registered. */
let firstRun: { port: number; clientId: string } | undefined;

beforeAll(async () => {
  stack = await startSessionGateway([{ id: "acme", scopes: ["search", "jobs", "sessions"] }], {
    modules: ["sessions"],
    now: () => Date.now() + ahead,
  });
  dir = await mkdtemp(join(tmpdir(), "tg-mcp-remote-"));
}, 120_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  await browser?.close().catch(() => {});
  await stack?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/**
 * Starts mcp-remote as Claude Desktop does (its callback server on `port`, its config in dir/auth): its "browser" only
 * writes the URL it was asked to open into `opened`. The connection settles once consent is given.
 */
async function launchMcpRemote(
  name: string,
  port: number,
): Promise<{ opened: string; stderr: string[]; mcp: Client; connected: Promise<void> }> {
  const opened = join(dir, `opened${name}.txt`);
  const opener = join(dir, `browser${name}.sh`);
  await writeFile(opener, `#!/bin/sh\nprintf '%s\\n' "$1" >> "${opened}"\n`);
  await chmod(opener, 0o755);
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && k !== "DISPLAY" && k !== "WAYLAND_DISPLAY") env[k] = v;
  Object.assign(env, { BROWSER: opener, MCP_REMOTE_CONFIG_DIR: join(dir, "auth") });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [join(process.cwd(), "node_modules/mcp-remote/dist/proxy.js"), `${stack.gateway.url}/mcp`, String(port), "--allow-http"],
    env,
    stderr: "pipe",
  });
  const stderr: string[] = [];
  transport.stderr?.on("data", (d) => stderr.push(String(d)));
  const mcp = new Client({ name: "claude-desktop-like", version: "1.0.0" });
  return { opened, stderr, mcp, connected: mcp.connect(transport) };
}

/** Waits (bounded) for the first URL the "browser" was asked to open. */
async function openedUrl(file: string, timeoutMs: number): Promise<string> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const text = await readFile(file, "utf8").catch(() => "");
    const first = text.split("\n").find(Boolean);
    if (first) return first;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("mcp-remote never opened a browser");
}

describe("mcp-remote, as Claude Desktop runs it", () => {
  it("connects with no header through the consent page in headless Chromium, then lists and calls tools", async () => {
    const port = await freePort();
    const { opened, stderr, mcp, connected } = await launchMcpRemote("", port);
    client = mcp;

    try {
      const url = new URL(await openedUrl(opened, 60_000));
      expect(`${url.origin}${url.pathname}`).toBe(`${stack.gateway.url}/authorize`);
      expect(url.searchParams.get("code_challenge_method")).toBe("S256");
      expect(url.searchParams.get("resource")).toBe(`${stack.gateway.url}/mcp`);

      browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
      const page = await browser.newPage();
      await page.goto(url.href);
      expect(await page.textContent("h1")).toContain("Allow");
      await page.fill('input[name="credential"]', stack.keys.acme!);
      // Only searches and jobs; a cap of $0.25 per day; a week.
      await page.uncheck('input[name="scope"][value="sessions"]');
      for (const s of ["agents", "sandboxes"]) {
        const box = page.locator(`input[name="scope"][value="${s}"]`);
        if (await box.count()) await box.uncheck();
      }
      // Of the jobs tools, not crawl (the longest, costliest).
      await page.uncheck('input[name="tool"][value="crawl"]');
      await page.fill('input[name="cap"]', "0.25");
      // TOLLGATE_SCREENSHOTS=<dir>: the consent page as the tenant sees it (docs/oauth-consent.png).
      if (process.env.TOLLGATE_SCREENSHOTS)
        await page.screenshot({ path: join(process.env.TOLLGATE_SCREENSHOTS, "oauth-consent.png"), fullPage: true });
      await page.selectOption('select[name="window"]', "daily");
      await page.fill('input[name="days"]', "7");
      await Promise.all([page.waitForURL(/\/oauth\/callback/, { timeout: 30_000 }), page.click('button[value="allow"]')]);
      expect(new URL(page.url()).searchParams.get("iss")).toBe(stack.gateway.url);

      await connected;
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["budget", "web_search", "scrape"]));
      expect(names).not.toContain("browser_create");
      expect(names).not.toContain("crawl");
      const budget = (await client.callTool({ name: "budget", arguments: {} })) as CallToolResult;
      const answer = JSON.parse((budget.content[0] as { text: string }).text);
      expect(answer.token).toMatchObject({ cap: "0.25", window: "daily", spent: "0.00" });
      expect(answer.token.grant).toMatch(/^grt_/);
      const grants = await (await fetch(`${stack.gateway.url}/_tollgate/grants`, { headers: { "x-api-key": stack.keys.acme! } })).json();
      expect(grants.grants).toHaveLength(1);
      expect(grants.grants[0].tools).toEqual(expect.arrayContaining(["web_search", "scrape"]));
      expect(grants.grants[0].tools).not.toContain("crawl");
      expect(grants.grants[0]).toMatchObject({
        scopes: ["search", "jobs"],
        window: "daily",
        client: { redirectHost: `localhost:${port}` },
      });
      firstRun = { port, clientId: grants.grants[0].client.id };
    } catch (err) {
      throw new Error(`${(err as Error).message}\nmcp-remote said:\n${stderr.join("").slice(-3000)}`);
    }
  }, 120_000);

  it("after the gateway forgot its registration, a restarted mcp-remote gets invalid_client, registers again and goes on", async () => {
    expect(firstRun).toBeDefined();
    const { port, clientId } = firstRun!;
    await client?.close();
    client = undefined;
    // The gateway forgets the registration (its registration.ttlDays passed) and the access token expires.
    await stack.gateway.gateway.services.stores.kv.delete(`oauth:client:${clientId}`);
    ahead += 3_600_000;
    // The same config directory: mcp-remote starts with the stored client and tokens of the first run.
    const { opened, stderr, mcp, connected } = await launchMcpRemote("-again", port);
    client = mcp;
    try {
      // Its refresh got invalid_client: it registered again (a new client_id) and sent the tenant to consent.
      const url = new URL(await openedUrl(opened, 60_000));
      expect(`${url.origin}${url.pathname}`).toBe(`${stack.gateway.url}/authorize`);
      const again = url.searchParams.get("client_id");
      expect(again).toMatch(/^tgc_/);
      expect(again).not.toBe(clientId);
      browser ??= await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox"] });
      const page = await browser.newPage();
      await page.goto(url.href);
      await page.fill('input[name="credential"]', stack.keys.acme!);
      // Searches only (the tenant has no agents or sandboxes scope: those boxes stay unticked).
      for (const scope of ["sessions", "jobs", "agents", "sandboxes"]) {
        const box = page.locator(`input[name="scope"][value="${scope}"]`);
        if (await box.count()) await box.uncheck();
      }
      await page.fill('input[name="cap"]', "0.10");
      await Promise.all([
        page.waitForURL(/\/oauth\/callback/, { timeout: 30_000 }).catch(async (e) => {
          throw new Error(`${e.message}; the page at ${page.url()}: ${(await page.textContent("body"))?.slice(0, 600)}`);
        }),
        page.click('button[value="allow"]'),
      ]);
      await connected;
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(["budget", "web_search"]));
      const budget = (await client.callTool({ name: "budget", arguments: {} })) as CallToolResult;
      expect(JSON.parse((budget.content[0] as { text: string }).text).token).toMatchObject({ cap: "0.10" });
    } catch (err) {
      throw new Error(`${(err as Error).message}\nmcp-remote said:\n${stderr.join("").slice(-3000)}`);
    }
  }, 120_000);
});
