// Where the session browser comes from, and the clear error when there is none.
import { afterAll, describe, expect, it } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { launchBrowser, livingGroupMembers } from "../../emulator/sessions/browser-process.js";
import { locateChromium } from "../../emulator/sessions/chromium-binary.js";
import { PageTracker } from "../../emulator/sessions/page-tracker.js";
import { startSessionsEmulator } from "./sessions-harness.js";

describe("session browser binary", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const d of dirs) await rm(d, { recursive: true, force: true });
  });

  it("prefers CHROMIUM_PATH, then the system Chromium", async () => {
    expect(await locateChromium({ env: { CHROMIUM_PATH: "/usr/bin/chromium" } })).toEqual({
      path: "/usr/bin/chromium",
      source: "CHROMIUM_PATH",
    });
    expect(await locateChromium({ env: {}, systemCandidates: ["/nonexistent/chrome", "/usr/bin/chromium"] })).toEqual({
      path: "/usr/bin/chromium",
      source: "system",
    });
  });

  it("falls back to @sparticuz/chromium, whose headless shell gets the requested viewport", async () => {
    const binary = await locateChromium({ env: {}, systemCandidates: [] });
    expect(binary.source).toBe("@sparticuz/chromium");
    const userDataDir = await mkdtemp(join(tmpdir(), "tollgate-sparticuz-"));
    dirs.push(userDataDir);
    const browser = await launchBrowser({ binary, userDataDir, width: 900, height: 640 });
    try {
      const tracker = await PageTracker.start(browser.cdpUrl, { acceptCookies: false });
      const page = await tracker.ensureActive();
      const r = await tracker.cdp.send(
        "Runtime.evaluate",
        { expression: "[innerWidth, innerHeight]", returnByValue: true },
        await tracker.sessionFor(page.targetId),
      );
      expect(r.result.value).toEqual([900, 640]);
      tracker.close();
    } finally {
      await browser.kill();
    }
    expect(await livingGroupMembers(browser.pid)).toEqual([]);
  });

  it("answers POST /api/session with 503 JSON saying what to install when no browser can start", async () => {
    const saved = process.env.CHROMIUM_PATH;
    process.env.CHROMIUM_PATH = "/nonexistent/chromium";
    const emu = await startSessionsEmulator();
    try {
      const res = await fetch(`${emu.controlUrl}/api/session`, { method: "POST", headers: { "x-api-key": emu.apiKey } });
      expect(res.status).toBe(503);
      const body = await res.json();
      expect(body.code).toBe("browser_unavailable");
      expect(body.message).toMatch(/apt-get install -y chromium/);
      expect(body.message).toMatch(/CHROMIUM_PATH/);
    } finally {
      if (saved === undefined) delete process.env.CHROMIUM_PATH;
      else process.env.CHROMIUM_PATH = saved;
      await emu.close();
    }
  });
});
