// Browser sessions as the upstream runs them: one real Chromium per session, its lifetime, its public detail shape.
import { randomUUID } from "node:crypto";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { join } from "node:path";
import type { EmulatorContext, SessionService } from "../types.js";
import { TEAM_ID } from "../team.js";
import { issueSessionToken } from "./access-token.js";
import { launchBrowser, type BrowserProcess } from "./browser-process.js";
import { findChromium } from "./chromium-binary.js";
import { restoreCookies, saveCookies, copyUserData } from "./browser-state.js";
import type { ExtensionStore } from "./extensions.js";
import { PageTracker } from "./page-tracker.js";
import type { ProfileStore } from "./profiles.js";
import { watchCaptchas } from "./captcha-check.js";
import { collectDownloads } from "./session-downloads.js";
import { SessionEventLogs } from "./session-events.js";
import type { SessionSnapshotStore } from "./session-snapshots.js";
import { SessionError } from "./session-error.js";
import { parseCreateSessionParams, type SessionLaunchParams } from "./session-params.js";

export type SessionStatus = "active" | "closed" | "close-error" | "error";
export const SESSION_STATUSES: readonly SessionStatus[] = ["active", "closed", "close-error", "error"];
export { TEAM_ID };

export type Session = {
  id: string;
  teamId: string;
  status: SessionStatus;
  startTime: number;
  endTime?: number;
  createdAt: string;
  updatedAt: string;
  sessionUrl: string;
  /** Proxy bytes used, as a decimal string (the Python SDK's `proxy_data_consumed: str`); no proxy here, so "0". */
  proxyDataConsumed: string;
  launchState: null;
  creditsUsed: number;
  creditBreakdown: { creditsUsed: number; browserTimeCreditsUsed: number; proxyDataCreditsUsed: number };
};

export type SessionDetail = Session & { wsEndpoint: string; computerActionEndpoint: string; liveUrl: string; token: string };

/** Live state of one session; the browser fields are dropped once it ends. */
export interface SessionRecord {
  id: string;
  owner?: string;
  /** Not charged to the team as browser time (an agent task's own session: its steps are the charge). */
  unbilled?: boolean;
  /** Bytes the browser loaded through the proxy (charged per MB); 0 without a proxy. */
  proxyBytes: number;
  status: SessionStatus;
  createdAt: Date;
  updatedAt: Date;
  endedAt?: Date;
  expiresAt: Date;
  token: string;
  params: SessionLaunchParams;
  userDataDir: string;
  /** Uploads (`uploads/`) and downloads (`downloads/`) of the session, on the host the browser runs on. */
  filesDir: string;
  events: SessionEventLogs;
  /** Settings changed after launch with `PUT /api/session/{id}/update`. */
  live: { solveCaptchas: boolean; proxy: Record<string, unknown> | null; screen: { width: number; height: number } };
  /** Whether tabs are being watched for captchas (from the first time solving was on). */
  watchingCaptchas?: boolean;
  browser?: BrowserProcess;
  pages?: PageTracker;
  timer?: NodeJS.Timeout;
  ending?: Promise<void>;
  /** A client sent CDP `Browser.close`: the browser's exit that follows ends the session as closed, not in error. */
  closedByClient?: boolean;
}

/**
 * Counts what a session "on the proxy" loads (the emulator has no proxy: every byte its tabs receive stands for proxy
 * data), from the emulator's own CDP connection: Network on every tab, encodedDataLength of each finished load.
 */
function meterProxyData(pages: PageTracker, record: SessionRecord): void {
  pages.onPage((targetId) => {
    pages
      .sessionFor(targetId)
      .then((sessionId) => pages.cdp.send("Network.enable", {}, sessionId))
      .catch(() => {}); // the tab may already be gone
  });
  pages.cdp.on("event", (e: { method: string; params: { encodedDataLength?: number } }) => {
    if (e.method === "Network.loadingFinished" && record.status === "active")
      record.proxyBytes += Math.max(0, e.params.encodedDataLength ?? 0);
  });
}

export class BrowserSessions implements SessionService {
  private readonly records = new Map<string, SessionRecord>();
  private readonly endListeners = new Set<(id: string) => void>();
  private closing = false;
  /** Switches that let session browsers reach the local web by name, as the job runners do (set with the jobs half). */
  localWebArgs: string[] = [];

  constructor(
    private readonly ctx: EmulatorContext,
    readonly stores: { profiles: ProfileStore; snapshots: SessionSnapshotStore; extensions: ExtensionStore },
  ) {
    // The team pays for its own sessions (not x402 ones, paid on the spot) once their usage has landed.
    ctx.credits?.addSource((owns) => {
      let total = 0;
      for (const [id, r] of this.records)
        if ((!owns || owns(id)) && this.billed(r) && ctx.credits!.landed(r.endedAt?.getTime())) total += this.credits(r).creditsUsed;
      return total;
    });
  }

  private billed(r: SessionRecord): boolean {
    return r.owner === undefined && !r.unbilled;
  }

  /** Credits of the session by the schedule: so far while active, final once ended (0 until its usage has landed). */
  private credits(r: SessionRecord): Session["creditBreakdown"] {
    const meter = this.ctx.credits;
    const end = r.endedAt?.getTime();
    if (!meter || !this.billed(r) || (end !== undefined && !meter.landed(end)))
      return { creditsUsed: 0, browserTimeCreditsUsed: 0, proxyDataCreditsUsed: 0 };
    return meter.session(r.createdAt.getTime(), end ?? Date.now(), r.proxyBytes);
  }

  async create(rawParams: Record<string, unknown>, opts: { owner?: string; unbilled?: boolean } = {}): Promise<SessionDetail> {
    const params = parseCreateSessionParams(rawParams);
    if (this.closing) throw new SessionError(503, "emulator_closing", "The emulator is shutting down");
    // What the browser starts from: a profile's or a snapshot's saved user data, else nothing.
    const seed = params.startFromSnapshotId
      ? this.stores.snapshots.get(params.startFromSnapshotId).dir
      : params.profile
        ? this.stores.profiles.get(params.profile.id).dir
        : undefined;
    const extensionDirs = this.stores.extensions.require(params.extensionIds).map((e) => e.dir);
    const binary = await findChromium();
    const id = randomUUID();
    const root = join(this.ctx.stateDir, "browser-sessions");
    await mkdir(root, { recursive: true });
    const userDataDir = await mkdtemp(join(root, `${id}-`));
    const filesDir = join(root, `${id}.files`);
    await mkdir(join(filesDir, "uploads"), { recursive: true });
    await mkdir(join(filesDir, "downloads"), { recursive: true });
    const events = new SessionEventLogs(id);
    const started = Date.now();
    let browser: BrowserProcess | undefined;
    let pages: PageTracker | undefined;
    try {
      if (seed) await copyUserData(seed, userDataDir);
      browser = await launchBrowser({
        binary,
        userDataDir,
        width: params.screen.width,
        height: params.screen.height,
        extensionDirs,
        extraArgs: this.localWebArgs,
      });
      pages = await PageTracker.start(browser.cdpUrl, { acceptCookies: params.acceptCookies });
      if (seed) await restoreCookies(pages.cdp, seed);
      await collectDownloads(pages.cdp, join(filesDir, "downloads"), events);
    } catch (err) {
      pages?.close();
      await browser?.kill().catch(() => {});
      await rm(userDataDir, { recursive: true, force: true }).catch(() => {});
      await rm(filesDir, { recursive: true, force: true }).catch(() => {});
      if (err instanceof SessionError) throw err;
      throw new SessionError(503, "browser_unavailable", `The browser could not be started: ${(err as Error).message}`);
    }
    const now = new Date();
    const expiresAt = new Date(now.getTime() + params.timeoutMinutes * 60_000);
    const record: SessionRecord = {
      id,
      owner: opts.owner,
      unbilled: opts.unbilled,
      proxyBytes: 0,
      status: "active",
      createdAt: now,
      updatedAt: now,
      expiresAt,
      token: await issueSessionToken(this.ctx.tokenSecret, id, expiresAt),
      params,
      userDataDir,
      filesDir,
      events,
      live: { solveCaptchas: params.solveCaptchas, proxy: null, screen: { ...params.screen } },
      browser,
      pages,
    };
    this.records.set(id, record);
    if (rawParams.useProxy === true && this.billed(record)) meterProxyData(pages, record);
    this.schedule(record);
    this.setCaptchaSolving(record, params.solveCaptchas);
    browser.exited.then(() => {
      // Browser.close from a client is the session's end (closed, as a stop); any other exit is a crash (error).
      if (record.status === "active" && !record.ending)
        void (record.closedByClient ? this.end(record, "closed", "Browser.close") : this.end(record, "error", "browser exited"));
    });
    this.ctx.log("session.started", { id, pid: browser.pid, binary: binary.source, ms: Date.now() - started });
    if (this.closing) {
      await this.end(record, "closed", "emulator closing");
      throw new SessionError(503, "emulator_closing", "The emulator is shutting down");
    }
    return this.detail(record);
  }

  get(id: string): SessionDetail | undefined {
    const record = this.records.get(id);
    return record && this.detail(record);
  }

  /** Ends the session; true when it exists (already ended sessions succeed too, as upstream). */
  async stop(id: string): Promise<boolean> {
    const record = this.records.get(id);
    if (!record) return false;
    await this.end(record, "closed", "stopped");
    return true;
  }

  /** Pushes the session's end back by `minutes` and reissues its token to match; 409 when it is not active. */
  async extend(record: SessionRecord, minutes: number): Promise<void> {
    if (record.status !== "active" || record.ending)
      throw new SessionError(409, "session_not_active", `Session ${record.id} is ${record.status}`);
    record.expiresAt = new Date(record.expiresAt.getTime() + minutes * 60_000);
    record.token = await issueSessionToken(this.ctx.tokenSecret, record.id, record.expiresAt);
    record.updatedAt = new Date();
    this.schedule(record);
  }

  /** Turns captcha solving on or off; while on, every page load is checked for captchas and what is met is logged. */
  setCaptchaSolving(record: SessionRecord, enabled: boolean): void {
    record.live.solveCaptchas = enabled;
    if (!enabled || record.watchingCaptchas || !record.pages) return;
    record.watchingCaptchas = true;
    watchCaptchas(record.pages, record.events, () => record.live.solveCaptchas);
  }

  /** A client of session `id` sent CDP `Browser.close` (the relay saw it): its browser is about to exit on purpose. */
  clientClosedBrowser(id: string): void {
    const record = this.records.get(id);
    if (record?.status === "active") record.closedByClient = true;
  }

  record(id: string): SessionRecord | undefined {
    return this.records.get(id);
  }

  /** Sessions newest first, optionally filtered by owner (undefined = the API-key team) and status. */
  list(filter: { owner?: string; statuses?: SessionStatus[] }): Session[] {
    return [...this.records.values()]
      .filter((r) => r.owner === filter.owner && (!filter.statuses?.length || filter.statuses.includes(r.status)))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime())
      .map((r) => this.summary(r));
  }

  /** Called with the session id whenever a session stops being active (stop, timeout, crash, close). */
  onEnd(listener: (id: string) => void): () => void {
    this.endListeners.add(listener);
    return () => this.endListeners.delete(listener);
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.records.values()].map((r) => this.end(r, "closed", "emulator closing")));
  }

  private schedule(record: SessionRecord): void {
    clearTimeout(record.timer);
    // setTimeout holds at most ~24.8 days; sessions are capped far below that.
    record.timer = setTimeout(() => void this.end(record, "closed", "timeout"), Math.max(0, record.expiresAt.getTime() - Date.now()));
    record.timer.unref();
  }

  private end(record: SessionRecord, status: SessionStatus, reason: string): Promise<void> {
    if (record.ending) return record.ending;
    if (record.status !== "active") return Promise.resolve();
    record.ending = (async () => {
      clearTimeout(record.timer);
      record.status = status;
      record.endedAt = record.updatedAt = new Date();
      for (const listener of this.endListeners) listener(record.id);
      const persist = record.params.profile?.persistChanges ? record.params.profile.id : undefined;
      if (persist && record.pages)
        await saveCookies(record.pages.cdp, record.userDataDir).catch((err) =>
          this.ctx.log("session.cookies.unsaved", { id: record.id, error: String(err) }),
        );
      record.pages?.close();
      try {
        await record.browser?.kill();
      } catch (err) {
        record.status = "close-error";
        this.ctx.log("session.close_error", { id: record.id, error: String(err) });
      }
      // Written back only once the browser is gone, so the copy is what it left on disk.
      if (persist)
        await this.stores.profiles
          .saveFrom(persist, record.userDataDir)
          .catch((err) => this.ctx.log("session.profile.unsaved", { id: record.id, error: String(err) }));
      await rm(record.userDataDir, { recursive: true, force: true }).catch(() => {});
      // Saved downloads stay for `downloads-url` until the emulator closes; everything else of the session goes.
      await rm(record.params.saveDownloads ? join(record.filesDir, "uploads") : record.filesDir, { recursive: true, force: true }).catch(
        () => {},
      );
      this.ctx.log("session.ended", { id: record.id, status: record.status, reason });
      record.browser = undefined;
      record.pages = undefined;
    })();
    return record.ending;
  }

  private summary(r: SessionRecord): Session {
    const origin = this.ctx.controlOrigin();
    const session: Session = {
      id: r.id,
      teamId: r.owner ? `x402:${r.owner}` : TEAM_ID,
      status: r.status,
      startTime: r.createdAt.getTime(),
      createdAt: r.createdAt.toISOString(),
      updatedAt: r.updatedAt.toISOString(),
      sessionUrl: `${origin}/api/session/${r.id}`,
      proxyDataConsumed: "0",
      launchState: null,
      creditsUsed: 0,
      creditBreakdown: this.credits(r),
    };
    session.creditsUsed = session.creditBreakdown.creditsUsed;
    if (r.endedAt) session.endTime = r.endedAt.getTime();
    return session;
  }

  private detail(r: SessionRecord): SessionDetail {
    const origin = this.ctx.controlOrigin();
    const wsOrigin = origin.replace(/^http/, "ws");
    return {
      ...this.summary(r),
      wsEndpoint: `${wsOrigin}/devtools/browser/${r.id}?token=${encodeURIComponent(r.token)}`,
      computerActionEndpoint: `${origin}/api/session/${r.id}/computer-action`,
      liveUrl: `${origin}/live/${r.id}?token=${encodeURIComponent(r.token)}`,
      token: r.token,
    };
  }
}
