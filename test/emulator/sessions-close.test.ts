// Closing the emulator ends every session browser it started.
import { describe, expect, it } from "vitest";
import { existsSync } from "node:fs";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer from "puppeteer-core";
import { livingGroupMembers } from "../../emulator/sessions/browser-process.js";
import { startSessionsEmulator } from "./sessions-harness.js";

describe("closing the sessions emulator", () => {
  it("marks a session whose browser died as error and reaps the rest of its process group", async () => {
    const emu = await startSessionsEmulator();
    try {
      const client = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
      const s = await client.sessions.create();
      const pid = emu.sessions.record(s.id)!.browser!.pid;
      process.kill(pid, "SIGKILL");
      await expect.poll(async () => (await client.sessions.get(s.id)).status, { timeout: 5000 }).toBe("error");
      await expect.poll(() => livingGroupMembers(pid), { timeout: 5000 }).toEqual([]);
      expect((await client.sessions.list({ status: "error" })).totalCount).toBe(1);
    } finally {
      await emu.close();
    }
  });

  it("ends a session whose client sent Browser.close as closed (not error); a reconnect is refused 409 as closed", async () => {
    const emu = await startSessionsEmulator();
    try {
      const client = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
      const s = await client.sessions.create();
      const pid = emu.sessions.record(s.id)!.browser!.pid;
      const browser = await puppeteer.connect({ browserWSEndpoint: s.wsEndpoint, defaultViewport: null });
      await browser.close();
      await expect.poll(async () => (await client.sessions.get(s.id)).status, { timeout: 5000 }).toBe("closed");
      await expect.poll(() => livingGroupMembers(pid), { timeout: 5000 }).toEqual([]);
      const again = await puppeteer.connect({ browserWSEndpoint: s.wsEndpoint }).then(
        () => "connected",
        (e: Error) => e.message,
      );
      expect(again).toMatch(/409/);
      expect((await client.sessions.list({ status: "error" })).totalCount).toBe(0);
      // A stop after it is a no-op success, as for any closed session.
      expect(await client.sessions.stop(s.id)).toMatchObject({ success: true });
    } finally {
      await emu.close();
    }
  });

  it("kills every session's process group and removes the profiles, even with a client connected", async () => {
    const emu = await startSessionsEmulator();
    const client = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
    const [a, b] = await Promise.all([client.sessions.create(), client.sessions.create({ timeoutMinutes: 5 })]);
    const records = [a, b].map((s) => emu.sessions.record(s.id)!);
    const pids = records.map((r) => r.browser!.pid);
    const browser = await puppeteer.connect({ browserWSEndpoint: a.wsEndpoint, defaultViewport: null });
    const disconnected = new Promise((r) => browser.once("disconnected", r));
    await emu.close();
    await disconnected;
    for (const pid of pids) expect(await livingGroupMembers(pid)).toEqual([]);
    for (const r of records) {
      expect(r.status).toBe("closed");
      expect(existsSync(r.userDataDir)).toBe(false);
    }
  });
});
