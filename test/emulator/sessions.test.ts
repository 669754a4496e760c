// Browser sessions on the emulator, driven by the unmodified SDK, puppeteer-core and playwright-core over loopback.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { chromium } from "playwright-core";
import WebSocket from "ws";
import { livingGroupMembers } from "../../emulator/sessions/browser-process.js";
import { pngSize, startPageServer, startSessionsEmulator, type SessionsEmulator } from "./sessions-harness.js";

const FIXTURE = `<!doctype html><html><head><title>Fixture page</title><style>
  body { margin: 0; height: 3000px; font: 16px sans-serif }
  #btn { position: absolute; left: 20px; top: 20px; width: 120px; height: 40px }
  #field { position: absolute; left: 20px; top: 100px; width: 300px; height: 30px }
  #other { position: absolute; left: 20px; top: 150px; width: 300px; height: 30px }
  #pad { position: absolute; left: 400px; top: 20px; width: 300px; height: 200px; background: #ddd }
</style></head><body>
<button id="btn">Click me</button><input id="other"><input id="field"><div id="pad"></div>
<script>
  window.state = { clicks: [], keys: [], drag: [], dbl: 0 };
  btn.addEventListener("click", (e) => state.clicks.push({ button: e.button, detail: e.detail, x: e.clientX, y: e.clientY }));
  btn.addEventListener("dblclick", () => state.dbl++);
  btn.addEventListener("contextmenu", (e) => { e.preventDefault(); state.clicks.push({ button: e.button, context: true }); });
  field.addEventListener("keydown", (e) => state.keys.push((e.ctrlKey ? "ctrl+" : "") + (e.shiftKey ? "shift+" : "") + e.key));
  pad.addEventListener("pointerdown", (e) => state.drag.push(["down", e.clientX, e.clientY]));
  pad.addEventListener("pointermove", (e) => { if (e.buttons & 1) state.drag.push(["move", e.clientX, e.clientY]); });
  pad.addEventListener("pointerup", (e) => state.drag.push(["up", e.clientX, e.clientY]));
</script></body></html>`;

const CONSENT = `<!doctype html><html><head><title>Consent</title></head><body>
<div id="banner">We use cookies <button onclick="document.cookie='consent=yes'; window.accepted = true; banner.remove()">Accept all</button></div>
</body></html>`;

const SCREEN = { width: 900, height: 640 };

describe("browser sessions", () => {
  let emu: SessionsEmulator;
  let pages: { url: string; close(): Promise<void> };
  let client: Hyperbrowser;
  let session: Awaited<ReturnType<Hyperbrowser["sessions"]["create"]>>;
  let browser: Browser;
  let page: Page;
  const timings: Record<string, number> = {};

  beforeAll(async () => {
    [emu, pages] = await Promise.all([startSessionsEmulator(), startPageServer({ "/": FIXTURE, "/consent": CONSENT })]);
    client = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
    const t0 = performance.now();
    session = await client.sessions.create({ screen: SCREEN, useStealth: true, someFutureOption: 1 } as never);
    timings.firstStartMs = Math.round(performance.now() - t0);
    browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
    page = await browser.newPage();
    await page.goto(`${pages.url}/`);
  });

  afterAll(async () => {
    await browser?.disconnect().catch(() => {});
    await emu?.close();
    await pages?.close();
    console.log(`session start timings: ${JSON.stringify(timings)}`);
  });

  const pageState = () => page.evaluate(() => (window as any).state);

  it("creates an active session with the SDK, in the upstream's detail shape", () => {
    expect(session).toMatchObject({ status: "active", teamId: expect.any(String), token: expect.any(String) });
    expect(session.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(session.wsEndpoint).toBe(`${emu.controlUrl.replace("http", "ws")}/devtools/browser/${session.id}?token=${session.token}`);
    expect(session.computerActionEndpoint).toBe(`${emu.controlUrl}/api/session/${session.id}/computer-action`);
    expect(new Date(session.createdAt).toString()).not.toBe("Invalid Date");
  });

  it("lets puppeteer-core drive the real browser through wsEndpoint", async () => {
    expect(await page.title()).toBe("Fixture page");
    expect(await page.evaluate(() => [innerWidth, innerHeight])).toEqual([SCREEN.width, SCREEN.height]);
    expect(await browser.version()).toMatch(/Chrome\/\d+/);
  });

  it("clicks with the requested button and click count", async () => {
    await client.computerAction.click(session.id, 80, 40, "left", 2);
    await client.computerAction.click(session, 80, 40, "right");
    const s = await pageState();
    expect(s.clicks).toEqual([
      { button: 0, detail: 1, x: 80, y: 40 },
      { button: 0, detail: 2, x: 80, y: 40 },
      { button: 2, context: true },
    ]);
    expect(s.dbl).toBe(1);
  });

  it("types text and presses xdotool key combinations", async () => {
    await client.computerAction.click(session.id, 100, 115);
    await client.computerAction.typeText(session.id, "Hello, World! 42");
    expect(await page.$eval("#field", (el) => (el as HTMLInputElement).value)).toBe("Hello, World! 42");
    await client.computerAction.pressKeys(session.id, ["ctrl+a"]);
    await client.computerAction.typeText(session.id, "replaced");
    await client.computerAction.pressKeys(session.id, ["Return", "shift+Tab"]);
    expect(await page.$eval("#field", (el) => (el as HTMLInputElement).value)).toBe("replaced");
    const s = await pageState();
    expect(s.keys).toContain("ctrl+Control");
    expect(s.keys).toContain("ctrl+a");
    expect(s.keys).toContain("Enter");
    expect(s.keys).toContain("shift+Tab");
    // shift+Tab moved focus to the input before it, as a user's keyboard would.
    expect(await page.evaluate(() => document.activeElement?.id)).toBe("other");
  });

  it("puts text into the selection, copies it with ctrl+c and reads the clipboard back", async () => {
    await client.computerAction.click(session.id, 100, 115);
    await client.computerAction.pressKeys(session.id, ["ctrl+a"]);
    await client.computerAction.putSelectionText(session.id, "from selection");
    expect(await page.$eval("#field", (el) => (el as HTMLInputElement).value)).toBe("from selection");
    await client.computerAction.pressKeys(session.id, ["ctrl+a", "ctrl+c"]);
    const res = await client.computerAction.getClipboardText(session.id);
    expect(res).toMatchObject({ success: true, data: { clipboardText: "from selection" } });
  });

  it("holds a key down for the given duration", async () => {
    await page.evaluate(() => {
      const s = (window as any).state;
      document.getElementById("field")!.addEventListener("keyup", (e) => (s.held = { key: e.key, at: performance.now() - s.downAt }));
      document.getElementById("field")!.addEventListener("keydown", (e) => e.key === "Shift" && (s.downAt = performance.now()));
    });
    await client.computerAction.holdKey(session.id, "shift", 0.3);
    const held = (await pageState()).held;
    expect(held.key).toBe("Shift");
    expect(held.at).toBeGreaterThanOrEqual(250);
  });

  it("drags along a path and moves the mouse with mouse_down / mouse_up", async () => {
    await client.computerAction.drag(session.id, [
      { x: 450, y: 50 },
      { x: 550, y: 100 },
      { x: 600, y: 150 },
    ]);
    let drag = (await pageState()).drag as Array<[string, number, number]>;
    expect(drag[0]).toEqual(["down", 450, 50]);
    expect(drag.at(-1)).toEqual(["up", 600, 150]);
    expect(drag.filter((d) => d[0] === "move").length).toBeGreaterThanOrEqual(3);
    await page.evaluate(() => ((window as any).state.drag = []));
    await client.computerAction.moveMouse(session.id, 420, 60);
    await client.computerAction.mouseDown(session.id);
    await client.computerAction.moveMouse(session.id, 480, 90);
    await client.computerAction.mouseUp(session.id);
    drag = (await pageState()).drag;
    expect(drag).toEqual([
      ["down", 420, 60],
      ["move", 480, 90],
      ["up", 480, 90],
    ]);
  });

  it("scrolls the page under the pointer", async () => {
    await client.computerAction.scroll(session.id, 200, 400, 0, 600);
    await page.waitForFunction(() => window.scrollY >= 300, { timeout: 5000 });
    await page.evaluate(() => window.scrollTo(0, 0));
  });

  it("returns PNG screenshots of the session's screen size", async () => {
    const shot = await client.computerAction.screenshot(session.id);
    expect(shot.success).toBe(true);
    expect(pngSize(shot.screenshot!)).toEqual(SCREEN);
    const withClick = await client.computerAction.click(session.id, 5, 5, "left", 1, true);
    expect(pngSize(withClick.screenshot!)).toEqual(SCREEN);
    const plain = await client.computerAction.moveMouse(session.id, 5, 5);
    expect(plain).toEqual({ success: true });
  });

  it("lists the session's tabs as windows, the newest one active", async () => {
    const res = await client.computerAction.listWindows(session.id);
    const data = res.data as { activeWindowId: string; windows: Array<{ id: string; name: string; active: boolean }> };
    expect(data.windows.length).toBeGreaterThanOrEqual(2);
    expect(data.windows.find((w) => w.active)).toMatchObject({ id: data.activeWindowId, name: "Fixture page" });
  });

  it("refuses bad computer-action bodies and unknown keys with 400 JSON", async () => {
    const post = (body: unknown) =>
      fetch(session.computerActionEndpoint!, {
        method: "POST",
        headers: { "x-api-key": emu.apiKey, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    for (const body of [
      { action: "teleport" },
      { action: "drag", path: [] },
      { action: "click", x: "a" },
      { action: "press_keys", keys: ["hyper+q"] },
    ]) {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ message: expect.any(String), code: expect.any(String) });
    }
    const noKey = await fetch(session.computerActionEndpoint!, { method: "POST", body: JSON.stringify({ action: "screenshot" }) });
    expect(noKey.status).toBe(401);
    expect(await noKey.json()).toMatchObject({ code: "unauthorized" });
  });

  it("accepts the session's own token as a Bearer for computer actions, but not for other sessions' calls", async () => {
    const bearer = { authorization: `Bearer ${session.token}`, "content-type": "application/json" };
    const ok = await fetch(session.computerActionEndpoint!, {
      method: "POST",
      headers: bearer,
      body: JSON.stringify({ action: "move_mouse", x: 1, y: 1 }),
    });
    expect(await ok.json()).toEqual({ success: true });
    const detail = await fetch(`${emu.controlUrl}/api/session/${session.id}`, { headers: bearer });
    expect(detail.status).toBe(401);
  });

  it("lets playwright-core connect over CDP with the same wsEndpoint", async () => {
    const pw = await chromium.connectOverCDP(session.wsEndpoint);
    try {
      const titles = await Promise.all(
        pw
          .contexts()
          .flatMap((c) => c.pages())
          .map((p) => p.title()),
      );
      expect(titles).toContain("Fixture page");
    } finally {
      await pw.close();
    }
    // playwright's close() of a CDP connection only disconnects; the session's browser keeps running.
    expect(await page.title()).toBe("Fixture page");
  });

  it("refuses a CDP upgrade with a wrong or missing token (401 with a JSON body)", async () => {
    const base = session.wsEndpoint.split("?")[0];
    for (const url of [
      base,
      `${base}?token=nope`,
      `${base.replace(session.id, "00000000-0000-0000-0000-000000000000")}?token=${session.token}`,
    ]) {
      const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const ws = new WebSocket(url);
        ws.on("open", () => reject(new Error("upgrade was accepted")));
        ws.on("unexpected-response", (_req, res) => {
          let body = "";
          res.on("data", (d) => (body += d)).on("end", () => resolve({ status: res.statusCode!, body }));
        });
        ws.on("error", () => {});
      });
      expect([401, 404]).toContain(refused.status);
      expect(JSON.parse(refused.body)).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    }
    await expect(puppeteer.connect({ browserWSEndpoint: `${base}?token=${session.token}x` })).rejects.toThrow(/401/);
  });

  it("answers unknown ids with 404 and lists sessions with status filter and paging", async () => {
    await expect(client.sessions.get("00000000-0000-0000-0000-000000000000")).rejects.toMatchObject({ statusCode: 404 });
    const list = await client.sessions.list({ status: "active", page: 1, limit: 5 });
    expect(list).toMatchObject({ totalCount: 1, page: 1, perPage: 5 });
    expect(list.sessions[0]).toMatchObject({ id: session.id, status: "active" });
    expect(list.sessions[0]).not.toHaveProperty("token");
    expect(await client.sessions.list({ status: "closed" })).toMatchObject({ sessions: [], totalCount: 0 });
  });

  it("clicks consent banners when acceptCookies is set (warm start timed)", async () => {
    const t0 = performance.now();
    const other = await client.sessions.create({ acceptCookies: true });
    timings.warmStartMs = Math.round(performance.now() - t0);
    const b = await puppeteer.connect({ browserWSEndpoint: other.wsEndpoint, defaultViewport: null });
    try {
      const [p] = await b.pages();
      await p.goto(`${pages.url}/consent`);
      await p.waitForFunction(() => (window as any).accepted === true, { timeout: 5000 });
      expect(await p.evaluate(() => document.cookie)).toBe("consent=yes");
      expect(await p.evaluate(() => [innerWidth, innerHeight])).toEqual([1280, 720]);
    } finally {
      await b.disconnect();
      await client.sessions.stop(other.id);
    }
  });

  it("stops a session, leaving no Chromium process behind and refusing new connections", async () => {
    const pid = emu.sessions.record(session.id)!.browser!.pid;
    expect((await livingGroupMembers(pid)).length).toBeGreaterThan(1);
    const disconnected = new Promise((r) => browser.once("disconnected", r));
    expect(await client.sessions.stop(session.id)).toEqual({ success: true });
    await disconnected;
    expect(await livingGroupMembers(pid)).toEqual([]);
    expect(await client.sessions.get(session.id)).toMatchObject({ status: "closed", endTime: expect.any(Number) });
    await expect(puppeteer.connect({ browserWSEndpoint: session.wsEndpoint })).rejects.toThrow(/409/);
    const action = await fetch(session.computerActionEndpoint!, {
      method: "POST",
      headers: { "x-api-key": emu.apiKey },
      body: JSON.stringify({ action: "screenshot" }),
    });
    expect(action.status).toBe(409);
    expect(await client.sessions.stop(session.id)).toEqual({ success: true });
  });

  it("ends a session when its timeoutMinutes run out", async () => {
    const short = await client.sessions.create({ timeoutMinutes: 0.03 });
    const pid = emu.sessions.record(short.id)!.browser!.pid;
    await new Promise((r) => setTimeout(r, 2500));
    expect(await client.sessions.get(short.id)).toMatchObject({ status: "closed" });
    expect(await livingGroupMembers(pid)).toEqual([]);
  });

  it("rejects invalid session parameters with 400 naming the field", async () => {
    await expect(client.sessions.create({ screen: { width: 10, height: 720 } })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/screen\.width/),
    });
    await expect(client.sessions.create({ timeoutMinutes: -1 })).rejects.toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/timeoutMinutes/),
    });
  });
});
