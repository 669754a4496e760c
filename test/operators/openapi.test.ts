// The OpenAPI document of the gateway's own routes, as served: every operation named, servers and security given,
// errors described, Redocly's linter clean; and the docs page served by the gateway from swagger-ui-dist, no CDN.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import puppeteer from "puppeteer-core";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { RunningGateway } from "../../src/host/node.js";
import { startBareGateway } from "../helpers/gateway.js";

let gw: RunningGateway;
let doc: any;
beforeAll(async () => {
  gw = await startBareGateway();
  doc = await (await fetch(`${gw.url}/_tollgate/openapi.json`)).json();
});
afterAll(() => gw?.close());

const operations = () =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, ops]) =>
    Object.entries(ops).map(([method, op]) => ({ path, method, op })),
  );

describe("/_tollgate/openapi.json", () => {
  it("names every operation with a unique operationId, and lists ready, metrics, usage, ledger, tokens and admin", () => {
    const ops = operations();
    expect(ops.length).toBeGreaterThanOrEqual(30);
    const ids = ops.map((o) => o.op.operationId);
    expect(ids.every((id) => typeof id === "string" && /^[A-Za-z][A-Za-z0-9]*$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    for (const p of ["health", "ready", "metrics", "usage", "ledger", "tokens", "admin/tenants", "admin/audit", "docs"])
      expect(Object.keys(doc.paths)).toContain(`/_tollgate/${p}`);
    expect(doc.paths["/_tollgate/ready"].get.operationId).toBe("getReadiness");
    expect(doc.paths["/_tollgate/metrics"].get.responses["200"].content).toHaveProperty("text/plain");
  });

  it("gives servers, security schemes, and error answers for every operation", () => {
    expect(doc.servers).toEqual([expect.objectContaining({ url: "/" })]);
    expect(Object.keys(doc.components.securitySchemes).sort()).toEqual(["identityProvider", "metricsToken", "tenantBearer", "tenantKey"]);
    for (const { path, method, op } of operations()) {
      const codes = Object.keys(op.responses);
      expect(
        codes.some((c) => c.startsWith("4")),
        `${method} ${path}`,
      ).toBe(true);
      // Open routes say so; the others name their schemes.
      expect(op.security ?? doc.security, `${method} ${path}`).toBeDefined();
      for (const c of codes.filter((x) => x.startsWith("4") && x !== "404"))
        if (op.responses[c].content?.["application/json"]) expect(op.responses[c].content["application/json"].schema).toBeDefined();
    }
    const admin = doc.paths["/_tollgate/admin/tenants"].get;
    expect(Object.keys(admin.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "403", "429", "503"]));
  });

  it("passes `redocly lint` (recommended rules) with no errors and no warnings", () => {
    const dir = mkdtempSync(join(tmpdir(), "tollgate-openapi-"));
    try {
      const file = join(dir, "openapi.json");
      writeFileSync(file, JSON.stringify(doc));
      const cli = createRequire(import.meta.url).resolve("@redocly/cli/bin/cli.js");
      const r = spawnSync(process.execPath, [cli, "lint", file, "--format=json"], {
        encoding: "utf8",
        timeout: 120_000,
        // Redocly reports usage to its servers unless told not to: nothing leaves loopback in tests.
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true", NO_COLOR: "1" },
      });
      const report = JSON.parse(r.stdout.slice(r.stdout.indexOf("{")));
      expect(report.problems, JSON.stringify(report.problems, null, 1)).toEqual([]);
      expect(r.status).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 150_000);
});

describe("/_tollgate/docs", () => {
  it("serves Swagger UI and its assets from the gateway itself, with no script or style from elsewhere", async () => {
    const r = await fetch(`${gw.url}/_tollgate/docs`);
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/html/);
    expect(r.headers.get("content-security-policy")).toMatch(/script-src 'self'/);
    const html = await r.text();
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
    expect(refs).toEqual(expect.arrayContaining(["docs/swagger-ui-bundle.js", "docs/swagger-ui.css", "docs/init.js"]));
    for (const ref of refs) {
      const a = await fetch(new URL(ref, `${gw.url}/_tollgate/docs`));
      expect(a.status, ref).toBe(200);
      expect((await a.arrayBuffer()).byteLength, ref).toBeGreaterThan(10);
    }
    const js = await fetch(`${gw.url}/_tollgate/docs/swagger-ui-bundle.js`);
    expect(js.headers.get("content-type")).toMatch(/javascript/);
    const init = await (await fetch(`${gw.url}/_tollgate/docs/init.js`)).text();
    expect(init).toContain('url: "openapi.json"');
    const missing = await fetch(`${gw.url}/_tollgate/docs/package.json`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ code: "not_found" });
  });
});

describe("/_tollgate/docs in Chromium", () => {
  it("renders every operation under its Content-Security-Policy, loading nothing from off the gateway", async () => {
    const profile = mkdtempSync(join(tmpdir(), "tollgate-docs-chromium-"));
    const browser = await puppeteer.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--no-first-run",
        `--user-data-dir=${profile}`,
      ],
    });
    try {
      const page = await browser.newPage();
      const elsewhere: string[] = [];
      const problems: string[] = [];
      page.on("request", (r) => {
        if (!r.url().startsWith(gw.url) && !r.url().startsWith("data:")) elsewhere.push(r.url());
      });
      page.on("console", (m) => {
        if (m.type() === "error") problems.push(m.text());
      });
      page.on("pageerror", (e) => problems.push(String(e)));
      await page.goto(`${gw.url}/_tollgate/docs`, { waitUntil: "load", timeout: 60_000 });
      await page.waitForSelector(".opblock", { timeout: 60_000 });
      const shown = await page.$$eval(".opblock", (els) => els.length);
      expect(shown).toBe(operations().length);
      expect(await page.$eval(".title", (el) => el.textContent)).toContain("Tollgate");
      expect(elsewhere).toEqual([]);
      expect(problems.filter((p) => /Content Security Policy|Refused/i.test(p))).toEqual([]);
    } finally {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    }
  }, 120_000);
});
