// Follows a session browser's tabs over the emulator's own CDP connection and knows which one the "user" sees.
import { CdpConnection, type CdpEvent } from "./cdp-connection.js";
import { CONSENT_SCRIPT } from "./cookie-consent.js";

export interface TrackedPage {
  targetId: string;
  title: string;
  url: string;
}

export class PageTracker {
  /** Open tabs in the order they were opened; the newest is in front, as in a browser window. */
  private readonly pages: TrackedPage[] = [];
  private readonly attached = new Map<string, Promise<string>>();
  /** Screen size set after launch (`update {type: "screen"}`); applied to every tab, present and future. */
  private screen?: { width: number; height: number };
  private readonly pageListeners: Array<(targetId: string) => void> = [];

  private constructor(
    readonly cdp: CdpConnection,
    private readonly acceptCookies: boolean,
  ) {
    cdp.on("event", (e: CdpEvent) => this.onEvent(e));
  }

  static async start(cdpUrl: string, opts: { acceptCookies: boolean }): Promise<PageTracker> {
    const cdp = await CdpConnection.open(cdpUrl);
    const tracker = new PageTracker(cdp, opts.acceptCookies);
    await cdp.send("Target.setDiscoverTargets", { discover: true });
    const { targetInfos } = await cdp.send<{ targetInfos: any[] }>("Target.getTargets");
    for (const info of targetInfos) tracker.onTargetSeen(info);
    return tracker;
  }

  list(): TrackedPage[] {
    return [...this.pages];
  }

  /** The open tabs with their current titles (title changes are not always announced as events). */
  async refreshed(): Promise<TrackedPage[]> {
    const { targetInfos } = await this.cdp.send<{ targetInfos: any[] }>("Target.getTargets");
    for (const info of targetInfos) {
      const page = this.pages.find((p) => p.targetId === info.targetId);
      if (page) Object.assign(page, { title: info.title ?? page.title, url: info.url ?? page.url });
    }
    return this.list();
  }

  /** The tab in front: the most recently opened one that is still open. */
  active(): TrackedPage | undefined {
    return this.pages[this.pages.length - 1];
  }

  /** A flattened CDP session on the tab, attached once and reused. */
  sessionFor(targetId: string): Promise<string> {
    let s = this.attached.get(targetId);
    if (!s) {
      s = this.cdp.send<{ sessionId: string }>("Target.attachToTarget", { targetId, flatten: true }).then((r) => r.sessionId);
      this.attached.set(targetId, s);
      s.catch(() => this.attached.delete(targetId));
    }
    return s;
  }

  /** Opens a blank tab when the user closed them all, as a kiosk browser would show one. */
  async ensureActive(): Promise<TrackedPage> {
    const page = this.active();
    if (page) return page;
    const { targetId } = await this.cdp.send<{ targetId: string }>("Target.createTarget", { url: "about:blank" });
    this.onTargetSeen({ targetId, type: "page", title: "about:blank", url: "about:blank" });
    return this.active()!;
  }

  /** Calls `listener` for every open tab now and for every tab opened later. */
  onPage(listener: (targetId: string) => void): void {
    this.pageListeners.push(listener);
    for (const p of this.pages) listener(p.targetId);
  }

  /**
   * Resizes the session's screen after launch. The virtual screen is fixed when Chromium starts, so each tab gets a
   * device-metrics override of the new size (viewport, `screen.*` and screenshots all follow), new tabs included.
   */
  async resize(width: number, height: number): Promise<void> {
    this.screen = { width, height };
    await Promise.all(this.pages.map((p) => this.applyScreen(p.targetId)));
  }

  close(): void {
    this.cdp.close();
  }

  private async applyScreen(targetId: string): Promise<void> {
    if (!this.screen) return;
    const { width, height } = this.screen;
    try {
      const sessionId = await this.sessionFor(targetId);
      await this.cdp.send(
        "Emulation.setDeviceMetricsOverride",
        { width, height, deviceScaleFactor: 1, mobile: false, screenWidth: width, screenHeight: height },
        sessionId,
      );
    } catch {
      // The tab may already be gone.
    }
  }

  private onEvent(e: CdpEvent): void {
    if (e.method === "Target.targetCreated") this.onTargetSeen(e.params.targetInfo);
    else if (e.method === "Target.targetInfoChanged") {
      const info = e.params.targetInfo;
      const page = this.pages.find((p) => p.targetId === info.targetId);
      if (page) Object.assign(page, { title: info.title ?? page.title, url: info.url ?? page.url });
    } else if (e.method === "Target.targetDestroyed" || e.method === "Target.targetCrashed") {
      const i = this.pages.findIndex((p) => p.targetId === e.params.targetId);
      if (i >= 0) this.pages.splice(i, 1);
      this.attached.delete(e.params.targetId);
    } else if (e.method === "Target.detachedFromTarget" && e.params.targetId) {
      this.attached.delete(e.params.targetId);
    }
  }

  private onTargetSeen(info: { targetId: string; type: string; title?: string; url?: string }): void {
    if (info.type !== "page" || this.pages.some((p) => p.targetId === info.targetId)) return;
    this.pages.push({ targetId: info.targetId, title: info.title ?? "", url: info.url ?? "" });
    if (this.acceptCookies) void this.installConsentClicker(info.targetId);
    if (this.screen) void this.applyScreen(info.targetId);
    for (const listener of this.pageListeners) listener(info.targetId);
  }

  private async installConsentClicker(targetId: string): Promise<void> {
    try {
      const sessionId = await this.sessionFor(targetId);
      // Scripts for new documents only run on a session with the Page domain enabled.
      await this.cdp.send("Page.enable", {}, sessionId);
      await this.cdp.send("Page.addScriptToEvaluateOnNewDocument", { source: CONSENT_SCRIPT }, sessionId);
      await this.cdp.send("Runtime.evaluate", { expression: CONSENT_SCRIPT }, sessionId);
    } catch {
      // Best effort: the tab may already be gone.
    }
  }
}
