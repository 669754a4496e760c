// Session operations beyond create/get/stop on the emulator, driven by the unmodified SDK and puppeteer-core.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "node:http";
import { mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { Hyperbrowser, type HyperbrowserError } from "@hyperbrowser/sdk";
import puppeteer, { type Browser } from "puppeteer-core";
import { pngSize, startSessionsEmulator, type SessionsEmulator } from "./sessions-harness.js";
import { statusOf } from "../helpers/sdk-status.js";

type SessionDetail = Awaited<ReturnType<Hyperbrowser["sessions"]["create"]>>;

/** Pages for the browser: a file input, a download link, a captcha widget, and a file served as an attachment. */
function startSite(): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    if (req.url === "/report.csv") {
      res.writeHead(200, { "content-type": "text/csv", "content-disposition": 'attachment; filename="report.csv"' });
      return res.end("a,b\n1,2\n");
    }
    const pages: Record<string, string> = {
      "/upload": `<!doctype html><input type="file" id="f">`,
      "/download": `<!doctype html><a id="dl" href="/report.csv">report</a>`,
      "/captcha": `<!doctype html><form><div class="g-recaptcha" data-sitekey="x"></div></form>`,
      "/": `<!doctype html><title>home</title>`,
    };
    const body = pages[new URL(req.url ?? "/", "http://site").pathname];
    res.writeHead(body ? 200 : 404, { "content-type": "text/html" });
    res.end(body ?? "not found");
  });
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
        close: () => (server.closeAllConnections(), new Promise<void>((r) => server.close(() => r()))),
      }),
    ),
  );
}

async function until<T>(what: () => Promise<T>, ok: (v: T) => boolean, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await what();
    if (ok(v) || Date.now() > deadline) return v;
    await new Promise((r) => setTimeout(r, 100));
  }
}

// Several tests start browsers of their own; on a loaded 2-core machine that takes tens of seconds.
describe("session operations", { timeout: 120_000 }, () => {
  let emu: SessionsEmulator;
  let site: { url: string; close(): Promise<void> };
  let hb: Hyperbrowser;
  let session: SessionDetail;
  let browser: Browser;

  beforeAll(async () => {
    [emu, site] = await Promise.all([startSessionsEmulator(), startSite()]);
    hb = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
    session = await hb.sessions.create({ screen: { width: 800, height: 600 }, saveDownloads: true });
    browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
  });
  afterAll(async () => {
    await browser?.disconnect().catch(() => {});
    await emu?.close();
    await site?.close();
  });

  it("counts the team's active sessions", async () => {
    expect(await hb.sessions.getActiveSessionsCount()).toEqual({ activeSessionsCount: 1 });
    const other = await hb.sessions.create();
    expect((await hb.sessions.getActiveSessionsCount()).activeSessionsCount).toBe(2);
    await hb.sessions.stop(other.id);
    expect((await hb.sessions.getActiveSessionsCount()).activeSessionsCount).toBe(1);
  });

  it("uploads a file into the session, where the browser's file input can read it", async () => {
    const up = await hb.sessions.uploadFile(session.id, { fileInput: Buffer.from("uploaded bytes"), fileName: "my notes*.txt" });
    expect(up).toMatchObject({ message: expect.any(String), fileName: "my notes_.txt", originalName: "my notes*.txt" });
    expect(up.filePath).toMatch(/\/uploads\/my notes_\.txt$/);
    const page = await browser.newPage();
    await page.goto(`${site.url}/upload`);
    const input = (await page.$("#f"))!;
    await (input as any).uploadFile(up.filePath);
    const text = await page.$eval("#f", (el) => (el as HTMLInputElement).files![0].text());
    expect(text).toBe("uploaded bytes");
    await page.close();
    // A path is sent as a stream (chunked multipart), and keeps its own base name.
    const dir = mkdtempSync(join(tmpdir(), "upload-"));
    writeFileSync(join(dir, "big.bin"), Buffer.alloc(300_000, 7));
    const streamed = await hb.sessions.uploadFile(session.id, { fileInput: join(dir, "big.bin") });
    expect(streamed.fileName).toBe("big.bin");
    expect(statSync(streamed.filePath!).size).toBe(300_000);
    rmSync(dir, { recursive: true, force: true });
  });

  it("resizes the screen of a live session: viewport, screen and screenshots follow, new tabs too", async () => {
    expect(await hb.sessions.updateScreenSize(session.id, { width: 1000, height: 700 })).toEqual({ success: true });
    const [first] = await browser.pages();
    expect(await first.evaluate(() => [innerWidth, innerHeight, screen.width, screen.height])).toEqual([1000, 700, 1000, 700]);
    const shot = await hb.computerAction.screenshot(session.id);
    expect(pngSize(shot.screenshot!)).toEqual({ width: 1000, height: 700 });
    const fresh = await browser.newPage();
    expect(
      await until(
        () => fresh.evaluate(() => [innerWidth, innerHeight]),
        (v) => v[0] === 1000,
      ),
    ).toEqual([1000, 700]);
    await fresh.close();
    expect(await statusOf(hb.sessions.updateScreenSize(session.id, { width: 10, height: 700 }))).toBe(400);
  });

  it("downloads into the session, logs file_downloaded, and archives the files once the session ends", async () => {
    const t0 = Date.now();
    const dl = await hb.sessions.create({ saveDownloads: true });
    const b = await puppeteer.connect({ browserWSEndpoint: dl.wsEndpoint, defaultViewport: null });
    const [page] = await b.pages();
    await page.goto(`${site.url}/download`);
    await page.click("#dl");
    const logs = await until(
      () => hb.sessions.eventLogs.list(dl.id, { types: ["file_downloaded"] }),
      (r) => r.totalCount > 0,
    );
    expect(logs.data).toEqual([
      expect.objectContaining({
        sessionId: dl.id,
        type: "file_downloaded",
        metadata: expect.objectContaining({ fileName: "report.csv", size: 8 }),
      }),
    ]);
    console.log(`download logged ${Date.now() - t0} ms after create`);
    expect(await hb.sessions.getDownloadsURL(dl.id)).toEqual({ status: "pending", downloadsUrl: null, error: null });
    await b.disconnect();
    await hb.sessions.stop(dl.id);
    const done = await hb.sessions.getDownloadsURL(dl.id);
    expect(done.status).toBe("completed");
    const zip = await request(done.downloadsUrl!);
    expect(zip.statusCode).toBe(200);
    const bytes = Buffer.from(await zip.body.arrayBuffer());
    expect(bytes.readUInt32LE(0)).toBe(0x04034b50);
    expect(bytes.includes(Buffer.from("report.csv"))).toBe(true);
    expect(bytes.includes(Buffer.from("a,b\n1,2\n"))).toBe(true);
    const forged = await request(done.downloadsUrl!.replace(/sig=[^&]+/, "sig=forged"));
    expect(forged.statusCode).toBe(401);
    await forged.body.dump();
    const plain = await hb.sessions.create();
    expect(await hb.sessions.getDownloadsURL(plain.id)).toEqual({ status: "not_enabled", downloadsUrl: null, error: null });
    await hb.sessions.stop(plain.id);
  });

  it("evaluates captchas: finds the widget, solves none, and logs what it met", async () => {
    const page = await browser.newPage();
    await page.goto(`${site.url}/captcha`);
    const res = await hb.sessions.evaluateCaptcha(session.id, { captcha: "recaptcha" });
    expect(res).toMatchObject({ success: true, captcha: "recaptcha", iterationsRequested: 1, solved: false, solvedCaptchas: [] });
    const onPage = res.pages.find((p) => p.url === `${site.url}/captcha`)!;
    expect(onPage).toMatchObject({ solved: false, checkedCaptchas: ["recaptcha"], targetId: expect.any(String) });
    const logs = await hb.sessions.eventLogs.list(session.id, { types: ["captcha_detected", "captcha_error"] });
    expect(logs.data.map((l) => [l.type, l.targetId, l.metadata.captcha])).toEqual([
      ["captcha_detected", onPage.targetId, "recaptcha"],
      ["captcha_error", onPage.targetId, "recaptcha"],
    ]);
    await page.close();
    expect(await statusOf(hb.sessions.evaluateCaptcha(session.id, { captcha: "nope" as never }))).toBe(400);
  });

  it("while captcha solving is on, logs the captchas each page load meets; off, it stays quiet", async () => {
    const solving = await hb.sessions.create({ solveCaptchas: true });
    const b = await puppeteer.connect({ browserWSEndpoint: solving.wsEndpoint, defaultViewport: null });
    const [page] = await b.pages();
    await page.goto(`${site.url}/captcha`);
    const met = await until(
      () => hb.sessions.eventLogs.list(solving.id, { types: ["captcha_detected"] }),
      (r) => r.totalCount > 0,
    );
    expect(met.data).toEqual([
      expect.objectContaining({ type: "captcha_detected", pageUrl: `${site.url}/captcha`, metadata: { captcha: "recaptcha" } }),
    ]);
    await hb.sessions.stopCaptchaSolving(solving.id);
    await page.goto(`${site.url}/`);
    await page.goto(`${site.url}/captcha?again`);
    await new Promise((r) => setTimeout(r, 500));
    expect((await hb.sessions.eventLogs.list(solving.id, { types: ["captcha_detected"] })).totalCount).toBe(1);
    await b.disconnect();
    await hb.sessions.stop(solving.id);
  });

  it("lists event logs with type, target, time filters and paging", async () => {
    const all = await hb.sessions.eventLogs.list(session.id);
    expect(all).toMatchObject({ page: 1, totalCount: all.data.length });
    expect(all.data.length).toBeGreaterThanOrEqual(2);
    const second = await hb.sessions.eventLogs.list(session.id, { limit: 1, page: 2 });
    expect(second).toMatchObject({ page: 2, perPage: 1, totalCount: all.totalCount });
    expect(second.data).toEqual([all.data[1]]);
    expect((await hb.sessions.eventLogs.list(session.id, { types: ["file_downloaded"] })).totalCount).toBe(0);
    expect((await hb.sessions.eventLogs.list(session.id, { targetId: "other" })).totalCount).toBe(0);
    expect((await hb.sessions.eventLogs.list(session.id, { startTimestamp: Date.now() + 60_000 })).totalCount).toBe(0);
    expect(await statusOf(hb.sessions.eventLogs.list(session.id, { types: ["bogus" as never] }))).toBe(400);
  });

  it("answers recordings as for a session without recording, and a requested one as failed", async () => {
    expect(await hb.sessions.getRecording(session.id)).toEqual([]);
    expect(await hb.sessions.getRecordingURL(session.id)).toEqual({ status: "not_enabled", recordingUrl: null, error: null });
    expect(await hb.sessions.getVideoRecordingURL(session.id)).toEqual({ status: "not_enabled", recordingUrl: null, error: null });
    const rec = await hb.sessions.create({ enableWebRecording: true, enableVideoWebRecording: true });
    expect(await hb.sessions.getRecordingURL(rec.id)).toMatchObject({ status: "failed", recordingUrl: null, error: expect.any(String) });
    expect(await hb.sessions.getVideoRecordingURL(rec.id)).toMatchObject({ status: "failed", recordingUrl: null });
    await hb.sessions.stop(rec.id);
  });

  it("extends a session's life past its original timeout, with a token that lasts as long", async () => {
    const short = await hb.sessions.create({ timeoutMinutes: 0.04 });
    expect(await hb.sessions.extendSession(short.id, 1)).toEqual({ success: true });
    await new Promise((r) => setTimeout(r, 3500));
    const later = await hb.sessions.get(short.id);
    expect(later.status).toBe("active");
    expect(later.token).not.toBe(short.token);
    const b = await puppeteer.connect({ browserWSEndpoint: later.wsEndpoint });
    expect(await b.version()).toMatch(/Chrome/);
    await b.disconnect();
    await hb.sessions.stop(short.id);
    expect(await statusOf(hb.sessions.extendSession(short.id, 1))).toBe(409);
    expect(await statusOf(hb.sessions.extendSession(session.id, -1))).toBe(400);
  });

  it("takes updates of proxy and captcha solving, and refuses a profile update without a profile", async () => {
    expect(await hb.sessions.updateProxyParams(session.id, { enabled: true, location: { country: "US" } })).toEqual({ success: true });
    expect(await hb.sessions.startCaptchaSolving(session.id)).toEqual({
      success: true,
      solveCaptchas: true,
      sessionId: session.id,
      telemetryReady: false,
    });
    expect(await hb.sessions.stopCaptchaSolving(session.id)).toMatchObject({ success: true, solveCaptchas: false });
    expect(await statusOf(hb.sessions.updateProfileParams(session.id, { persistChanges: true }))).toBe(400);
    const raw = await request(`${emu.controlUrl}/api/session/${session.id}/update`, {
      method: "PUT",
      headers: { "x-api-key": emu.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ type: "wings", params: {} }),
    });
    expect(raw.statusCode).toBe(400);
    expect(await raw.body.json()).toMatchObject({ code: "invalid_params" });
  });

  it("snapshots a live session; a new session started from it has its cookies", async () => {
    const [page] = await browser.pages();
    await page.goto(`${site.url}/`);
    await page.evaluate(() => (document.cookie = "snap=kept; max-age=3600; path=/"));
    const snap = await hb.sessions.createSnapshot(session.id);
    expect(snap).toMatchObject({ snapshotId: expect.any(String), status: "created", ready: true, uploaded: true, namespace: "team" });
    const restored = await hb.sessions.create({ startFromSnapshot: { snapshotId: snap.snapshotId } });
    const b = await puppeteer.connect({ browserWSEndpoint: restored.wsEndpoint, defaultViewport: null });
    const [p] = await b.pages();
    await p.goto(`${site.url}/`);
    expect(await p.evaluate(() => document.cookie)).toContain("snap=kept");
    await b.disconnect();
    await hb.sessions.stop(restored.id);
    expect(await statusOf(hb.sessions.create({ startFromSnapshot: { snapshotId: "nope" } }))).toBe(404);
  });

  it("answers every operation on an unknown session with 404 {message, code}", async () => {
    const id = "00000000-0000-0000-0000-000000000000";
    const calls: Array<[string, Promise<unknown>]> = [
      ["snapshot", hb.sessions.createSnapshot(id)],
      ["captcha", hb.sessions.evaluateCaptcha(id)],
      ["recording", hb.sessions.getRecording(id)],
      ["recording-url", hb.sessions.getRecordingURL(id)],
      ["video-recording-url", hb.sessions.getVideoRecordingURL(id)],
      ["downloads-url", hb.sessions.getDownloadsURL(id)],
      ["event-logs", hb.sessions.eventLogs.list(id)],
      ["uploads", hb.sessions.uploadFile(id, { fileInput: Buffer.from("x"), fileName: "x.txt" })],
      ["extend", hb.sessions.extendSession(id, 5)],
      ["update", hb.sessions.updateScreenSize(id, { width: 800, height: 600 })],
    ];
    for (const [name, call] of calls) {
      const err = await call.then(
        () => undefined,
        (e: HyperbrowserError) => e,
      );
      expect(err?.statusCode, name).toBe(404);
      expect(err?.details, name).toEqual({ message: `Session ${id} not found`, code: "not_found" });
    }
  });

  it("refuses operations on an ended session with 409 where they need a live browser", async () => {
    const ended = await hb.sessions.create();
    await hb.sessions.stop(ended.id);
    expect(await statusOf(hb.sessions.createSnapshot(ended.id))).toBe(409);
    expect(await statusOf(hb.sessions.uploadFile(ended.id, { fileInput: Buffer.from("x"), fileName: "x.txt" }))).toBe(409);
    expect(await statusOf(hb.sessions.updateScreenSize(ended.id, { width: 800, height: 600 }))).toBe(409);
    expect((await hb.sessions.eventLogs.list(ended.id)).totalCount).toBe(0);
  });
});
