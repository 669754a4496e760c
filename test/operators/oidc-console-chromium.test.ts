// OIDC sign-in to the console in a real Chromium (playwright-core, /usr/bin/chromium): the console at
// http://localhost:<port> and the provider (oidc-provider) at http://127.0.0.1:<port> are different sites, so this is
// the browser's own cross-site round trip — the provider's login and consent pages filled in, the console's
// SameSite=Strict session cookie present on the page after the callback, sign-out back to the sign-in page. With
// OIDC_SCREENSHOTS=docs the pages are photographed into docs/console-oidc-*.png.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium, type Browser, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";
import { consoleRedirects, startOidcProvider, type TestOidcProvider } from "../helpers/oidc-provider.js";

type Running = Awaited<ReturnType<typeof startTestGateway>>;

describe("OIDC sign-in to the console in Chromium", () => {
  let emu: EmulatorHandle;
  let idp: TestOidcProvider;
  let gw: Running;
  let browser: Browser;
  let dir: string;
  let shots: string;
  let base = "";

  beforeAll(async () => {
    emu = await startEmulator({ modules: ["sandboxes"] });
    idp = await startOidcProvider({
      users: {
        alice: { email: "alice@example.com", groups: ["platform-admins"] },
        tom: { email: "tom@acme.example", groups: ["customers"], tenant: "acme" },
      },
      ...consoleRedirects(() => base),
    });
    gw = await startTestGateway(
      {
        server: { logLevel: "error" },
        upstream: { baseUrl: emu.controlUrl },
        operators: {
          oidc: {
            issuer: idp.issuer,
            clientId: idp.clientId,
            scopes: ["openid", "email"],
            roles: { admin: ["groups:platform-admins"], tenant: ["groups:customers"] },
          },
        },
        tenants: [
          { id: "acme", keys: [{ hash: await hashTenantKey(generateTenantKey()) }], budget: { daily: "5.00" } },
          { id: "globex", keys: [{ hash: await hashTenantKey(generateTenantKey()) }], budget: { daily: "20.00" } },
        ],
      },
      { tokenSecret: randomBytes(32).toString("hex"), oidcClientSecret: idp.clientSecret },
    );
    base = gw.url.replace("127.0.0.1", "localhost");
    dir = await mkdtemp(join(tmpdir(), "tollgate-oidc-chromium-"));
    shots = process.env.OIDC_SCREENSHOTS === "docs" ? join(import.meta.dirname, "../../docs") : join(dir, "shots");
    await mkdir(shots, { recursive: true });
    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"],
    });
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
    await idp?.close();
    await emu?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  async function signIn(page: Page, user: string, shotPrefix?: string) {
    await page.goto(`${base}/_tollgate/console/login`);
    if (shotPrefix) await page.screenshot({ path: join(shots, `${shotPrefix}-login.png`) });
    await page.click("a[data-sso]");
    await page.waitForURL((u) => u.href.startsWith(idp.issuer));
    await page.fill('input[name="login"]', user);
    await page.fill('input[name="password"]', "any");
    if (shotPrefix) await page.screenshot({ path: join(shots, `${shotPrefix}-provider.png`) });
    await page.click('button[type="submit"]');
    await page.waitForURL((u) => u.href.startsWith(idp.issuer) && u.pathname.startsWith("/interaction/"));
    await page.click('button[type="submit"]'); // the consent page's Continue
    await page.waitForURL(`${base}/_tollgate/console`);
  }

  it("signs an admin in through the provider's pages and shows every tenant; sign-out returns to sign-in", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await signIn(page, "alice", "console-oidc");
    await expect.poll(() => page.textContent("header .who")).toContain("alice@example.com (admin)");
    const body = await page.textContent("main");
    expect(body).toContain("acme");
    expect(body).toContain("globex");
    await page.screenshot({ path: join(shots, "console-oidc-admin.png"), fullPage: false });
    const cookie = (await context.cookies(`${base}/_tollgate/console`)).find((c) => c.name === "tollgate_console");
    expect(cookie?.sameSite).toBe("Strict");
    expect(cookie?.httpOnly).toBe(true);
    await page.click('header button[type="submit"]'); // Sign out
    await page.waitForURL((u) => u.href.startsWith(idp.issuer));
    await page.click('button[type="submit"]'); // the provider's "Yes, sign me out"
    await page.waitForURL(`${base}/_tollgate/console/login`);
    expect((await context.cookies(`${base}/_tollgate/console`)).some((c) => c.name === "tollgate_console")).toBe(false);
    await context.close();
  });

  it("shows a tenant user only its tenant", async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    await signIn(page, "tom");
    await expect.poll(() => page.textContent("header .who")).toContain("tom@acme.example · acme (tenant)");
    expect(await page.textContent("main")).not.toContain("globex");
    await page.screenshot({ path: join(shots, "console-oidc-tenant.png") });
    const other = await page.goto(`${base}/_tollgate/console/tenants/globex`);
    expect(other?.status()).toBe(404);
    await context.close();
  });
});
