// Profiles, extensions and team credit info on the emulator, driven by the unmodified SDK (and puppeteer-core for
// what a profile carries from one session to the next).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { Hyperbrowser, type HyperbrowserError } from "@hyperbrowser/sdk";
import puppeteer from "puppeteer-core";
import { writeZip } from "../../emulator/sessions/zip-writer.js";
import { startPageServer, startSessionsEmulator, type SessionsEmulator } from "./sessions-harness.js";
import { statusOf } from "../helpers/sdk-status.js";

let emu: SessionsEmulator;
let site: { url: string; close(): Promise<void> };
let hb: Hyperbrowser;
let work: string;
beforeAll(async () => {
  [emu, site] = await Promise.all([startSessionsEmulator(), startPageServer({ "/": "<!doctype html><title>site</title>" })]);
  hb = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
  work = mkdtempSync(join(tmpdir(), "control-profiles-"));
});
afterAll(async () => {
  await emu?.close();
  await site?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Runs `fn` on the first tab of a new session with these parameters, at the test site, then stops the session. */
async function inSession<T>(
  params: Parameters<Hyperbrowser["sessions"]["create"]>[0],
  fn: (page: import("puppeteer-core").Page) => Promise<T>,
): Promise<T> {
  const s = await hb.sessions.create(params);
  const browser = await puppeteer.connect({ browserWSEndpoint: s.wsEndpoint, defaultViewport: null });
  try {
    const [page] = await browser.pages();
    await page.goto(`${site.url}/`);
    return await fn(page);
  } finally {
    await browser.disconnect();
    await hb.sessions.stop(s.id);
  }
}

const setCookie = (value: string) => (page: import("puppeteer-core").Page) =>
  page.evaluate((v) => (document.cookie = `who=${v}; max-age=3600; path=/`), value);
const readCookie = (page: import("puppeteer-core").Page) => page.evaluate(() => document.cookie);

describe("profiles", () => {
  it("creates, reads, lists by name with paging, and deletes", async () => {
    const a = await hb.profiles.create({ name: "Checkout bot" });
    expect(a).toEqual({ id: expect.any(String), name: "Checkout bot" });
    const b = await hb.profiles.create();
    expect(b.name).toBeNull();
    const got = await hb.profiles.get(a.id);
    expect(got).toMatchObject({ id: a.id, name: "Checkout bot", teamId: expect.any(String) });
    expect(new Date(got.createdAt).toString()).not.toBe("Invalid Date");
    expect((await hb.profiles.list({ name: "checkout" })).profiles.map((p) => p.id)).toEqual([a.id]);
    const paged = await hb.profiles.list({ limit: 1, page: 2 });
    expect(paged).toMatchObject({ page: 2, perPage: 1, totalCount: 2 });
    expect(paged.profiles.map((p) => p.id)).toEqual([a.id]); // newest first
    expect(await hb.profiles.delete(b.id)).toEqual({ success: true });
    expect(await statusOf(hb.profiles.get(b.id))).toBe(404);
  });

  // Each of these starts several browsers one after another: minutes, not seconds, on a loaded 2-core machine.
  const SESSIONS_TIMEOUT = 180_000;

  it(
    "carries cookies to the next session with persistChanges",
    async () => {
      const { id } = await hb.profiles.create({ name: "persisted" });
      await inSession({ profile: { id, persistChanges: true } }, setCookie("first"));
      expect(await inSession({ profile: { id } }, readCookie)).toContain("who=first");
    },
    SESSIONS_TIMEOUT,
  );

  it(
    "leaves the profile as it was when the session does not persist changes",
    async () => {
      const { id } = await hb.profiles.create({ name: "kept" });
      await inSession({ profile: { id, persistChanges: true } }, setCookie("first"));
      await inSession({ profile: { id, persistChanges: false } }, setCookie("discarded"));
      expect(await inSession({ profile: { id } }, readCookie)).toContain("who=first");
    },
    SESSIONS_TIMEOUT,
  );

  it(
    "persists once updateProfileParams turns persistence on, and keeps an in-use profile from deletion (409)",
    async () => {
      const { id } = await hb.profiles.create({ name: "updated" });
      const s = await hb.sessions.create({ profile: { id } });
      const browser = await puppeteer.connect({ browserWSEndpoint: s.wsEndpoint, defaultViewport: null });
      const [page] = await browser.pages();
      await page.goto(`${site.url}/`);
      await setCookie("updated")(page);
      expect(await hb.sessions.updateProfileParams(s.id, { persistChanges: true })).toEqual({ success: true });
      expect(await statusOf(hb.profiles.delete(id))).toBe(409);
      await browser.disconnect();
      await hb.sessions.stop(s.id);
      expect(await inSession({ profile: { id } }, readCookie)).toContain("who=updated");
      expect(await hb.profiles.delete(id)).toEqual({ success: true });
    },
    SESSIONS_TIMEOUT,
  );

  it(
    "forks a profile: the fork starts with its data, and the two then differ",
    async () => {
      const { id } = await hb.profiles.create({ name: "origin" });
      await inSession({ profile: { id, persistChanges: true } }, setCookie("origin"));
      const fork = await hb.profiles.fork(id, { name: "branch" });
      expect(fork).toEqual({ id: expect.any(String), name: "branch" });
      expect(fork.id).not.toBe(id);
      expect(await inSession({ profile: { id: fork.id } }, readCookie)).toContain("who=origin");
      await inSession({ profile: { id: fork.id, persistChanges: true } }, setCookie("branch"));
      expect(await inSession({ profile: { id } }, readCookie)).toContain("who=origin");
      expect(await inSession({ profile: { id: fork.id } }, readCookie)).toContain("who=branch");
    },
    SESSIONS_TIMEOUT,
  );

  it("answers unknown profiles with 404 {message, code}, also when a session names one", async () => {
    const id = "00000000-0000-0000-0000-000000000000";
    for (const call of [hb.profiles.get(id), hb.profiles.delete(id), hb.profiles.fork(id), hb.sessions.create({ profile: { id } })]) {
      const err = await call.then(
        () => undefined,
        (e: HyperbrowserError) => e,
      );
      expect(err?.statusCode).toBe(404);
      expect(err?.details).toEqual({ message: `Profile ${id} not found`, code: "not_found" });
    }
  });
});

describe("extensions", () => {
  it("uploads a zipped extension, lists it, and loads it into the browser of a session that names it", async () => {
    const dir = join(work, "ext");
    mkdirSync(dir, { recursive: true });
    const manifest = {
      manifest_version: 3,
      name: "Hello",
      version: "1.0",
      content_scripts: [{ matches: ["<all_urls>"], js: ["mark.js"], run_at: "document_start" }],
    };
    writeFileSync(join(dir, "manifest.json"), JSON.stringify(manifest));
    writeFileSync(join(dir, "mark.js"), 'document.documentElement.dataset.ext = "loaded";');
    const zipPath = join(work, "hello-ext.zip");
    await writeZip(dir, zipPath);
    const named = await hb.extensions.create({ filePath: zipPath, name: "Hello extension" });
    expect(named).toEqual({
      id: expect.any(String),
      name: "Hello extension",
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const unnamed = await hb.extensions.create({ filePath: zipPath });
    expect(unnamed.name).toBe("hello-ext");
    // The current service's shape, `{extensions: […]}` (the Node SDK's type still says a bare array; it returns the JSON).
    const listed = (await hb.extensions.list()) as unknown as { extensions: Array<{ id: string }> };
    expect(listed.extensions.map((e) => e.id)).toEqual([named.id, unnamed.id]);
    const mark = await inSession({ extensionIds: [named.id] }, async (page) => {
      await page.reload();
      return page.evaluate(() => document.documentElement.dataset.ext);
    });
    expect(mark).toBe("loaded");
    expect(await inSession({}, (page) => page.evaluate(() => document.documentElement.dataset.ext ?? null))).toBeNull();
  }, 120_000);

  it("refuses a file that is not a zip archive with 400, and a session naming an unknown extension with 404", async () => {
    const fake = join(work, "fake.zip");
    writeFileSync(fake, "not a zip");
    expect(await statusOf(hb.extensions.create({ filePath: fake }))).toBe(400);
    const empty = join(work, "empty");
    mkdirSync(empty, { recursive: true });
    writeFileSync(join(empty, "readme.txt"), "no manifest here");
    const noManifest = join(work, "no-manifest.zip");
    await writeZip(empty, noManifest);
    const err = await hb.extensions.create({ filePath: noManifest }).then(
      () => undefined,
      (e: HyperbrowserError) => e,
    );
    expect(err?.statusCode).toBe(400);
    expect(err?.details).toMatchObject({ code: "invalid_extension" });
    expect(await statusOf(hb.sessions.create({ extensionIds: ["nope"] }))).toBe(404);
  });
});

describe("team and authentication", () => {
  it("reports credit usage, limit and what remains; these routes refuse calls without the API key", async () => {
    const info = await hb.team.getCreditInfo();
    // The sessions this file ran (and ended) are charged by the emulator's schedule (emulator/credits.ts).
    expect(info).toEqual({ usage: expect.any(Number), limit: expect.any(Number), remaining: expect.any(Number) });
    expect(info.usage).toBeGreaterThanOrEqual(0);
    expect(info.remaining).toBeCloseTo(info.limit - info.usage, 3);
    for (const path of ["/api/team/credit-info", "/api/profiles", "/api/extensions/list", "/api/sessions/active-count"]) {
      const none = await request(`${emu.controlUrl}${path}`);
      expect(none.statusCode, path).toBe(401);
      expect(await none.body.json()).toMatchObject({ code: "unauthorized" });
    }
  });
});
