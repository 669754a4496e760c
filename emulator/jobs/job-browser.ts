// The one shared headless Chromium that runs scrape, crawl, extract and fetch jobs: launched on first use, bounded.
import { mkdtemp, mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import puppeteer, { type Browser, type BrowserContext, type Page } from "puppeteer-core";
import type { EmulatorContext } from "../types.js";
import { launchBrowser, type BrowserProcess } from "../sessions/browser-process.js";
import { findChromium } from "../sessions/chromium-binary.js";
import type { LocalWeb } from "../web/index.js";
import { routeToLocalWeb, type RoutedPage } from "./local-routing.js";

interface PooledPage {
  page: Page;
  routing: Awaited<ReturnType<typeof routeToLocalWeb>>;
}
import { Slots } from "./slots.js";

/**
 * No name resolves except loopback: the local web is reached by request interception, so DNS prefetching and
 * any request that slips past interception fail on this machine instead of leaving it.
 */
export const OFFLINE_BROWSER_ARGS = [
  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost",
  "--dns-prefetch-disable",
  "--disable-features=NetworkPrediction",
];

export interface JobBrowserOptions {
  /** Pages open at once across all jobs. */
  maxPages?: number;
  width?: number;
  height?: number;
}

export class JobBrowser {
  private starting?: Promise<{ proc: BrowserProcess; browser: Browser; context: BrowserContext; dir: string }>;
  private readonly idle: PooledPage[] = [];
  private readonly slots: Slots;
  private closed = false;

  constructor(
    private readonly ctx: EmulatorContext,
    private readonly web: LocalWeb,
    private readonly opts: JobBrowserOptions = {},
  ) {
    this.slots = new Slots(opts.maxPages ?? 4);
  }

  /** Pid of the browser's process group once launched (tests check it is gone after close). */
  async pid(): Promise<number | undefined> {
    return this.starting ? (await this.starting).proc.pid : undefined;
  }

  /**
   * Runs `fn` on a page of the job browser, routed to the local web. Pages are kept and reused (opening one costs a
   * renderer process, a second or more on a loaded machine): between uses a page goes back to about:blank with the
   * context's cookies cleared; a page whose use failed is closed instead.
   */
  async withPage<T>(fn: (page: Page, routed: RoutedPage) => Promise<T>): Promise<T> {
    const release = await this.slots.acquire();
    let pooled: PooledPage | undefined;
    let healthy = false;
    try {
      pooled = this.idle.pop() ?? (await this.openPage());
      const result = await fn(pooled.page, pooled.routing.begin());
      healthy = true;
      return result;
    } finally {
      if (pooled) void this.recycle(pooled, healthy).finally(release);
      else release();
    }
  }

  private async openPage(): Promise<PooledPage> {
    const { context } = await this.ensure();
    const page = await context.newPage();
    await page.setViewport({ width: this.opts.width ?? 1280, height: this.opts.height ?? 720 });
    return { page, routing: await routeToLocalWeb(page, this.web) };
  }

  private async recycle(pooled: PooledPage, healthy: boolean): Promise<void> {
    pooled.routing.begin();
    try {
      if (!healthy || this.closed) throw new Error("not reused");
      await pooled.page.goto("about:blank", { timeout: 5000 });
      const cdp = await pooled.page.createCDPSession();
      await cdp.send("Network.clearBrowserCookies").catch(() => {});
      await cdp.detach().catch(() => {});
      this.idle.push(pooled);
    } catch {
      await pooled.page.close().catch(() => {});
    }
  }

  private ensure() {
    if (this.closed) return Promise.reject(new Error("The emulator is shutting down"));
    if (!this.starting) {
      const starting = (async () => {
        const binary = await findChromium();
        const root = join(this.ctx.stateDir, "job-browser");
        await mkdir(root, { recursive: true });
        const dir = await mkdtemp(join(root, "profile-"));
        const proc = await launchBrowser({
          binary,
          userDataDir: dir,
          width: this.opts.width ?? 1280,
          height: this.opts.height ?? 720,
          extraArgs: OFFLINE_BROWSER_ARGS,
        });
        try {
          const browser = await puppeteer.connect({ browserWSEndpoint: proc.cdpUrl, defaultViewport: null });
          // Job pages live in a context of their own, apart from the browser's default one.
          const context = await browser.createBrowserContext();
          this.ctx.log("jobs.browser.started", { pid: proc.pid, binary: binary.source });
          return { proc, browser, context, dir };
        } catch (err) {
          await proc.kill().catch(() => {});
          throw err;
        }
      })();
      this.starting = starting;
      // A browser that died (crash, OOM kill) is replaced on the next job rather than failing every job after it.
      void starting
        .then(({ proc }) => proc.exited)
        .then(() => {
          if (this.starting !== starting) return;
          this.starting = undefined;
          this.idle.length = 0;
          if (!this.closed) this.ctx.log("jobs.browser.exited", {});
        })
        .catch(() => {});
      // A failed launch is not kept: the next job tries again.
      starting.catch(() => {
        if (this.starting === starting) this.starting = undefined;
      });
    }
    return this.starting;
  }

  async close(): Promise<void> {
    this.closed = true;
    const started = await this.starting?.catch(() => undefined);
    if (!started) return;
    await started.browser.disconnect().catch(() => {});
    await started.proc.kill();
    await rm(started.dir, { recursive: true, force: true }).catch(() => {});
  }
}
