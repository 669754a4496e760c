// Many upstream accounts behind one gateway (issue 45): the official SDK through the gateway in front of an emulator
// running three accounts. Creations spread by weight; one account's concurrency limit makes a creation spill to another
// with nothing made twice; a failing account opens its breaker and new work goes elsewhere while every resource stays
// with its own account; a pinned tenant never lands elsewhere; another tenant's id is 404 whatever account holds it.
import { randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { statusOf } from "../helpers/sdk-status.js";
import { writeZip } from "../../emulator/sessions/zip-writer.js";
import { stateKeys } from "../../src/state/keys.js";

let emu: EmulatorHandle;
let gw: RunningGateway;
const keys: Record<string, string> = {};
const logs: string[] = [];
const METRICS_TOKEN = randomBytes(16).toString("hex");
const sdk = (tenant: string) => new Hyperbrowser({ apiKey: keys[tenant]!, baseUrl: gw.url });
const ownerOf = (id: string) => emu.accounts.ownerOf(id);
const calls = (account: string) => emu.accounts.get(account)!.calls;
const created = () => emu.accounts.list.reduce((n, a) => n + a.created, 0);

async function get(path: string, tenant = "ops") {
  const res = await fetch(gw.url + path, { headers: { "x-api-key": keys[tenant]! } });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

async function metrics(): Promise<string> {
  return (await fetch(`${gw.url}/_tollgate/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
}

/** Control-plane requests naming `id` (those with an API key), with the account whose key each carried. */
function accountsThatSaw(id: string): Set<string> {
  const seen = new Set<string>();
  for (const r of emu.received)
    if (r.url.includes(id) && r.headers["x-api-key"]) seen.add(emu.accounts.byKey(r.headers["x-api-key"])?.id ?? "unknown");
  return seen;
}

beforeAll(async () => {
  // The emulator's account "a" takes one session at a time; the gateway is not told (the upstream's 429 is the truth).
  emu = await startEmulator({
    modules: ["sessions", "sandboxes"],
    record: true,
    accounts: [{ id: "a", limits: { sessions: 1 } }, { id: "b" }, { id: "c" }],
  });
  const tenants = [];
  for (const [id, extra] of [
    ["acme", {}],
    ["globex", {}],
    ["pinned", { accounts: ["c"] }],
    ["ops", { scopes: ["admin", "sessions"] }],
  ] as const) {
    keys[id] = generateTenantKey();
    tenants.push({ id, scopes: ["sessions", "sandboxes"], ...extra, keys: [{ hash: await hashTenantKey(keys[id]) }] });
  }
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "info" },
    upstream: {
      baseUrl: emu.controlUrl,
      allowedHosts: [new URL(emu.controlUrl).host, new URL(emu.runtimeUrl).host, `localhost:${new URL(emu.runtimeUrl).port}`],
      accounts: [
        { id: "a", apiKeyEnv: "KEY_A", weight: 2 },
        { id: "b", apiKeyEnv: "KEY_B", weight: 1 },
        { id: "c", apiKeyEnv: "KEY_C", weight: 1 },
      ],
      // Errors open it, not slowness: a session's Chromium can take over 10 s to start on a loaded CI host.
      breaker: { failures: 3, window: 10, openSeconds: 1, retryBackoffMs: 20, slowMs: 120_000 },
    },
    // Per account, the team's usage is in whole credits (so up to one credit, $0.001, apart from the ledger's exact
    // figures); work the gateway never saw is more than that.
    credits: { driftAlertUsd: "0.002" },
    tenants,
  });
  gw = await startNodeGateway({
    config,
    secrets: {
      tokenSecret: randomBytes(32).toString("hex"),
      metricsToken: METRICS_TOKEN,
      accountApiKeys: { a: emu.accounts.get("a")!.apiKey, b: emu.accounts.get("b")!.apiKey, c: emu.accounts.get("c")!.apiKey },
    },
    logSink: (l) => logs.push(l),
  });
}, 60_000);

afterAll(async () => {
  await gw?.close();
  await emu?.close();
});

describe("placement", () => {
  it("spreads creations by weight (2:1:1), and lists merge the tenant's resources across accounts", async () => {
    const acme = sdk("acme");
    const ids: string[] = [];
    for (let i = 0; i < 8; i++) ids.push((await acme.profiles.create({ name: `p${i}` })).id);
    const by = (acct: string) => ids.filter((id) => ownerOf(id) === acct).length;
    expect([by("a"), by("b"), by("c")]).toEqual([4, 2, 2]);
    // Every one reachable through the gateway (each through its own account), and listed together.
    for (const id of ids) expect((await acme.profiles.get(id)).id).toBe(id);
    for (const id of ids) expect(accountsThatSaw(id)).toEqual(new Set([ownerOf(id)]));
    const listed = await acme.profiles.list({ limit: 100 } as never);
    expect(listed.profiles.map((p) => p.id).sort()).toEqual([...ids].sort());
    expect(listed.totalCount).toBe(8);
  });

  it("places an uploaded extension too (its multipart body held for a spill), and merges the extension list", async () => {
    const work = mkdtempSync(join(tmpdir(), "tg-acct-ext-"));
    try {
      const dir = join(work, "ext");
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "manifest.json"), JSON.stringify({ manifest_version: 3, name: "Hello", version: "1.0" }));
      const zipPath = join(work, "hello.zip");
      await writeZip(dir, zipPath);
      const acme = sdk("acme");
      const ids: string[] = [];
      emu.accounts.set("a", "refuse"); // a's turn spills: the same upload is sent to the next account
      try {
        for (let i = 0; i < 4; i++) ids.push((await acme.extensions.create({ filePath: zipPath, name: `e${i}` })).id);
      } finally {
        emu.accounts.set("a", "ok");
      }
      expect(ids.every((id) => ownerOf(id) !== "a")).toBe(true);
      expect(new Set(ids.map(ownerOf)).size).toBe(2);
      const listed = (await acme.extensions.list()) as unknown as { extensions: Array<{ id: string }> };
      expect(listed.extensions.map((e) => e.id).sort()).toEqual([...ids].sort());
      const theirs = (await sdk("globex").extensions.list()) as unknown as { extensions: Array<{ id: string }> };
      expect(theirs.extensions).toEqual([]);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it("spills a session past one account's concurrency limit to another, making nothing twice", async () => {
    const acme = sdk("acme");
    const before = created();
    const aCalls = calls("a");
    const sessions = [];
    // By weight a takes the first and the fourth; its limit refuses the fourth, which moves on.
    for (let i = 0; i < 4; i++) sessions.push(await acme.sessions.create());
    // Exactly four sessions exist upstream: the refused attempt made nothing.
    expect(created() - before).toBe(4);
    const owners = sessions.map((s) => ownerOf(s.id)!);
    expect(owners.filter((o) => o === "a").length).toBe(1);
    expect(calls("a") - aCalls).toBeGreaterThan(1); // a was asked again and refused (429), the creation moved on
    expect(await metrics()).toMatch(/tollgate_upstream_account_spills_total\{account="a",reason="limit"\} [1-9]/);
    // Each session answers through its own account; stopping it goes there too.
    for (const s of sessions) {
      expect((await acme.sessions.get(s.id)).status).toBe("active");
      await acme.sessions.stop(s.id);
      expect(accountsThatSaw(s.id)).toEqual(new Set([ownerOf(s.id)]));
    }
  }, 60_000);

  it("keeps a pinned tenant on its account, even when that account refuses", async () => {
    const pinned = sdk("pinned");
    for (let i = 0; i < 3; i++) expect(ownerOf((await pinned.profiles.create()).id)).toBe("c");
    emu.accounts.set("c", "refuse");
    try {
      const others = calls("a") + calls("b");
      const res = await fetch(`${gw.url}/api/profile`, {
        method: "POST",
        headers: { "x-api-key": keys.pinned!, "content-type": "application/json" },
        body: "{}",
      });
      expect(res.status).toBe(429);
      expect(await res.json()).toMatchObject({ code: "concurrency_limit_exceeded", message: expect.any(String) });
      expect(calls("a") + calls("b")).toBe(others);
    } finally {
      emu.accounts.set("c", "ok");
    }
  });
});

describe("custody", () => {
  it("answers another tenant's id 404, exactly as a missing one, whatever account holds it", async () => {
    const acme = sdk("acme");
    const globex = sdk("globex");
    const mine: Record<string, string> = {};
    for (let i = 0; i < 6 && Object.keys(mine).length < 3; i++) {
      const id = (await acme.profiles.create()).id;
      mine[ownerOf(id)!] ??= id;
    }
    expect(Object.keys(mine).sort()).toEqual(["a", "b", "c"]);
    const missing = await fetch(`${gw.url}/api/profile/nope`, { headers: { "x-api-key": keys.globex! } });
    const missingBody = await missing.json();
    for (const id of Object.values(mine)) {
      expect(await statusOf(globex.profiles.get(id))).toBe(404);
      const res = await fetch(`${gw.url}/api/profile/${id}`, { headers: { "x-api-key": keys.globex! } });
      expect(res.status).toBe(404);
      expect(Object.keys(await res.json())).toEqual(Object.keys(missingBody));
    }
    expect((await globex.profiles.list()).profiles).toEqual([]);
  });
});

describe("resilience", () => {
  it("opens a failing account's breaker: new work goes elsewhere, every resource stays with its own account", async () => {
    const acme = sdk("acme");
    // One profile on each account first.
    const held: Record<string, string> = {};
    for (let i = 0; i < 6 && Object.keys(held).length < 3; i++) {
      const id = (await acme.profiles.create()).id;
      held[ownerOf(id)!] ??= id;
    }
    emu.accounts.set("b", "fail");
    try {
      // b is picked by weight one creation in four; each of its failures spills the creation to another account,
      // and three failures open its breaker.
      const made: string[] = [];
      for (let i = 0; i < 12; i++) made.push((await acme.profiles.create()).id);
      expect(made.every((id) => ownerOf(id) !== "b")).toBe(true);
      expect(await metrics()).toMatch(/tollgate_upstream_account_spills_total\{account="b",reason="failed"\} 3/);
      const ready = await get("/_tollgate/ready");
      expect(ready.body.accounts).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ id: "b", breaker: "open" }),
          expect.objectContaining({ id: "a", breaker: "closed" }),
        ]),
      );
      expect(JSON.stringify(ready.body)).not.toContain(emu.accounts.get("b")!.apiKey);
      expect(await metrics()).toMatch(/tollgate_upstream_account_breaker_open\{account="b"\} 1/);
      // While open, b is not asked for new work at all.
      const bCalls = calls("b");
      for (let i = 0; i < 3; i++) expect(ownerOf((await acme.profiles.create()).id)).not.toBe("b");
      expect(calls("b")).toBe(bCalls);
      // Resources on the healthy accounts answer; b's resource is never asked of another account.
      expect((await acme.profiles.get(held.a!)).id).toBe(held.a);
      expect((await acme.profiles.get(held.c!)).id).toBe(held.c);
      const onB = await fetch(`${gw.url}/api/profile/${held.b}`, { headers: { "x-api-key": keys.acme! } });
      expect(onB.status).toBe(503);
      expect(await onB.json()).toMatchObject({ code: "upstream_account_unavailable" });
      // The breaker answered for b: no other account was asked about b's resource.
      expect([...accountsThatSaw(held.b!)].filter((a) => a !== "b")).toEqual([]);
    } finally {
      emu.accounts.set("b", "ok");
    }
    // After openSeconds one probe goes through; it succeeds and closes the breaker.
    await new Promise((r) => setTimeout(r, 1100));
    expect((await acme.profiles.get(held.b!)).id).toBe(held.b);
    expect(accountsThatSaw(held.b!)).toEqual(new Set(["b"]));
    const ready = await get("/_tollgate/ready");
    expect(ready.body.accounts).toEqual(expect.arrayContaining([expect.objectContaining({ id: "b", breaker: "closed" })]));
    expect(await metrics()).toMatch(/tollgate_upstream_account_breaker_open\{account="b"\} 0/);
  }, 60_000);

  it("retries a safe read that failed on its account, within the request's budget; never a creation", async () => {
    const acme = sdk("acme");
    let id = "";
    for (let i = 0; i < 4 && ownerOf(id) !== "c"; i++) id = (await acme.profiles.create()).id;
    expect(ownerOf(id)).toBe("c");
    emu.accounts.set("c", "fail");
    // Asks about this profile only: on a slow run the reconciler's once-more read of an earlier test's session (a
    // minute after it was settled) may go to c in the same moment.
    const askedOfC = () =>
      emu.received.filter((r) => r.url.includes(id) && r.headers["x-api-key"] === emu.accounts.get("c")!.apiKey).length;
    const cCalls = askedOfC();
    const res = await fetch(`${gw.url}/api/profile/${id}`, { headers: { "x-api-key": keys.acme! } });
    emu.accounts.set("c", "ok");
    expect(res.status).toBe(503);
    expect(askedOfC() - cCalls).toBe(3); // the read and its two retries
    expect(await metrics()).toMatch(/tollgate_upstream_account_retries_total\{account="c"\} [2-9]/);
    // Those three failures opened c's breaker: the pinned tenant's creation is refused without asking anyone.
    const pinnedCreate = () =>
      fetch(`${gw.url}/api/profile`, {
        method: "POST",
        headers: { "x-api-key": keys.pinned!, "content-type": "application/json" },
        body: "{}",
      });
    emu.accounts.set("c", "fail");
    let before = calls("c");
    const refused = await pinnedCreate();
    expect(refused.status).toBe(503);
    expect(await refused.json()).toMatchObject({ code: "upstream_accounts_unavailable", message: expect.any(String) });
    expect(calls("c")).toBe(before);
    // Once half-open, its one probe is that creation: sent once, never retried (a creation may spend).
    await new Promise((r) => setTimeout(r, 1100));
    before = calls("c");
    const probe = await pinnedCreate();
    emu.accounts.set("c", "ok");
    expect(probe.status).toBe(503);
    expect(calls("c") - before).toBe(1);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await pinnedCreate()).status).toBe(200);
  });

  it("logs no account's key", () => {
    expect(logs.length).toBeGreaterThan(0);
    for (const a of ["a", "b", "c"]) expect(logs.join("\n")).not.toContain(emu.accounts.get(a)!.apiKey);
  });
});

describe("books per account", () => {
  const services = () => gw.gateway.services;
  const reconcile = async () => (await gw.gateway.reconciler.runOnce()).creditsDrift!;
  const usd = (credits: number) => Math.round(credits * 1000) / 1e6; // usdPerCredit 0.001, in USD
  /**
   * Earlier tests' sessions count as read once more already. The reconciler reads a session settled from the upstream's
   * figure once more a minute on, and the emulator prices a session by the schedule when asked, earlier ones too: on a
   * slow run that read lands inside these books, at this test's price, and corrects an earlier session upward.
   */
  const earlierSessionsRechecked = async () => {
    for (const e of await services().stores.ledger.list({ kind: "credits", limit: 1000 }))
      if (e.resource?.startsWith("session:")) await services().stores.kv.setIfAbsent(stateKeys.creditsRechecked(e.id), "test", 3_600_000);
  };

  it("settles each session from its own account and reconciles each account's books with its own usage", async () => {
    const acme = sdk("acme");
    // 4 credits a second, so each account's usage grows by whole credits. The emulator prices a session by the schedule
    // when asked, earlier ones too: the books start over from here (each account's baseline).
    emu.credits.schedule.browserMinute = 240;
    onTestFinished(() => {
      emu.credits.schedule.browserMinute = 2;
    });
    await earlierSessionsRechecked();
    for (const a of ["a", "b", "c"]) await services().stores.kv.delete(stateKeys.creditsDrift("baseline", a));
    const first = await reconcile();
    expect(Object.keys(first.accounts!).sort()).toEqual(["a", "b", "c"]);
    expect(first.driftUsd).toBe("0.00");
    const before = Object.fromEntries(["a", "b", "c"].map((a) => [a, emu.credits.usage(a)]));
    const sessions: string[] = [];
    // Until each account holds one (a takes one at a time: by weight it is asked again, refuses, and the session moves on).
    for (let i = 0; i < 6 && new Set(sessions.map(ownerOf)).size < 3; i++) sessions.push((await acme.sessions.create()).id);
    await new Promise((r) => setTimeout(r, 1_000));
    for (const id of sessions) await acme.sessions.stop(id);
    expect(new Set(sessions.map(ownerOf))).toEqual(new Set(["a", "b", "c"]));
    const report = await reconcile();
    const perAccount: Record<string, number> = {};
    for (const id of sessions) {
      const account = ownerOf(id)!;
      // The session's creditsUsed, read from its own account, is its ledger entry (at cost, multiplier 1)...
      const used = (await acme.sessions.get(id)).creditsUsed!;
      expect(used).toBeGreaterThan(1);
      const [entry] = await services().stores.ledger.list({ tenant: "acme", resource: `session:${id}` });
      expect(entry).toMatchObject({ state: "committed", settledFrom: "upstream", amount: String(Math.round(used * 1000)) });
      // ...and what the account reports it used.
      perAccount[account] = (perAccount[account] ?? 0) + used;
    }
    for (const [account, used] of Object.entries(perAccount)) {
      expect(emu.credits.usage(account) - before[account]!).toBeCloseTo(used, 3);
      // Each account's books: the ledger's spend on it is its sessions, the team's usage the same within a credit.
      const books = report.accounts![account]!;
      expect(Number(books.ledgerUsd)).toBeCloseTo(usd(used), 6);
      expect(Math.abs(Number(books.driftUsd))).toBeLessThan(0.001);
      expect(books.alerting).toBe(false);
    }
    expect(report.alerting).toBe(false);
  }, 60_000);

  it("names the account whose usage drifted from the ledger (work the gateway never saw)", async () => {
    await earlierSessionsRechecked();
    const earlier = await reconcile();
    emu.credits.schedule.browserMinute = 240;
    onTestFinished(() => {
      emu.credits.schedule.browserMinute = 2;
    });
    const headers = { "x-api-key": emu.accounts.get("b")!.apiKey, "content-type": "application/json" };
    const direct = (await (await fetch(`${emu.controlUrl}/api/session`, { method: "POST", headers, body: "{}" })).json()) as { id: string };
    await new Promise((r) => setTimeout(r, 1_000));
    await fetch(`${emu.controlUrl}/api/session/${direct.id}/stop`, { method: "PUT", headers });
    const report = await reconcile();
    expect(report.alerting).toBe(true);
    // b's usage grew by the direct session; the ledger did not see it.
    expect(report.accounts!.b!.alerting).toBe(true);
    expect(Number(report.accounts!.b!.teamUsd)).toBeGreaterThan(Number(earlier.accounts!.b!.teamUsd));
    expect(Number(report.accounts!.b!.driftUsd)).toBeGreaterThan(0.002); // past driftAlertUsd
    expect(report.accounts!.a!.alerting).toBe(false);
    expect(report.accounts!.c!.alerting).toBe(false);
    const alerts = (await services().stores.audit.list({ limit: 1000 })).filter((a) => a.action === "alert.credits.drift");
    expect(JSON.stringify(alerts)).toContain('"account":"b"');
    expect(logs.some((l) => l.includes("credit spend drifted") && l.includes('"account":"b"'))).toBe(true);
  }, 60_000);

  it("shows each account's breaker and settled spend on the console's overview, to admins only", async () => {
    const signIn = async (tenant: string) => {
      const r = await fetch(`${gw.url}/_tollgate/console/login`, {
        method: "POST",
        redirect: "manual",
        headers: { origin: gw.url, "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ key: keys[tenant]! }),
      });
      expect(r.status).toBe(303);
      return r.headers.get("set-cookie")!.split(";")[0]!;
    };
    const overview = async (cookie: string) => (await fetch(`${gw.url}/_tollgate/console/`, { headers: { cookie } })).text();
    const html = await overview(await signIn("ops"));
    expect(html).toContain("Upstream accounts");
    for (const a of ["a", "b", "c"]) {
      const row = html.match(new RegExp(`<tr data-account="${a}">(.*?)</tr>`))?.[1] ?? "";
      expect(row).toContain("closed");
      expect(row).toMatch(/\$[0-9]+\.[0-9]+/); // each account's settled credit spend (its sessions above)
    }
    expect(await overview(await signIn("acme"))).not.toContain("Upstream accounts");
  });

  it("exports usage with an account column", async () => {
    const res = await fetch(`${gw.url}/_tollgate/admin/usage/export?format=csv`, { headers: { "x-api-key": keys.ops! } });
    expect(res.status).toBe(200);
    const [header, ...rows] = (await res.text()).trim().split("\r\n");
    expect(header).toBe("tenant,account,day,kind,route,entries,amountUsd,committedUsd,heldUsd,costUsd");
    const accountsSeen = new Set(rows.filter((r) => r.startsWith("acme,") && r.includes(",session.create,")).map((r) => r.split(",")[1]));
    expect(accountsSeen).toEqual(new Set(["a", "b", "c"]));
  });
});

describe("custody on the runtime plane and CDP", () => {
  it("runs a sandbox's commands and a session's CDP through the account that holds each", async () => {
    const acme = sdk("acme");
    const sandboxes = [];
    for (let i = 0; i < 4 && new Set(sandboxes.map((s) => ownerOf(s.id))).size < 2; i++)
      sandboxes.push(await acme.sandboxes.create({ imageName: "node" }));
    try {
      expect(new Set(sandboxes.map((s) => ownerOf(s.id))).size).toBe(2);
      for (const sbx of sandboxes) {
        expect((await acme.sandboxes.get(sbx.id)).status).toBe("active");
        expect((await sbx.exec("echo hi")).stdout).toBe("hi\n");
        // Its control calls (the runtime token included) carried its own account's key only.
        expect(accountsThatSaw(sbx.id)).toEqual(new Set([ownerOf(sbx.id)]));
      }
    } finally {
      for (const sbx of sandboxes) await acme.sandboxes.stop(sbx.id).catch(() => {});
    }
    let session: Awaited<ReturnType<typeof acme.sessions.create>> | undefined;
    const made = [];
    for (let i = 0; i < 4 && (!session || ownerOf(session.id) === "a"); i++) made.push((session = await acme.sessions.create()));
    try {
      expect(ownerOf(session!.id)).not.toBe("a");
      const browser = await puppeteer.connect({ browserWSEndpoint: session!.wsEndpoint, defaultViewport: null });
      try {
        const page = (await browser.pages())[0] ?? (await browser.newPage());
        expect(await page.evaluate(() => 1 + 1)).toBe(2);
      } finally {
        await browser.disconnect();
      }
      expect((await acme.sessions.get(session!.id)).status).toBe("active");
      expect(accountsThatSaw(session!.id)).toEqual(new Set([ownerOf(session!.id)]));
    } finally {
      for (const s of made) await acme.sessions.stop(s.id).catch(() => {});
    }
  }, 120_000);
});
