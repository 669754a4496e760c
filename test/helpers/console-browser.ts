// The console in a real Chromium (puppeteer-core) against the demo stack (gateway + emulator + local chain): the stack,
// a browser with a throwaway profile, where screenshots go (docs/ with CONSOLE_SCREENSHOTS=docs) and a key sign-in.
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { startDevStack, type DevStack } from "../../src/cli/dev-stack.js";
import type { EmulatorOptions } from "../../emulator/index.js";

export interface ConsoleBrowser {
  stack: DevStack;
  browser: Browser;
  /** The gateway's origin. */
  base: string;
  /** Where a test's screenshots go: docs/ with CONSOLE_SCREENSHOTS=docs, else a throwaway folder. */
  shots: string;
  consoleUrl(path?: string): string;
  /** A fresh browser context signed in to the console with `key` (dialogs accepted with `acceptDialogs`). */
  signIn(key: string, opts?: { acceptDialogs?: boolean }): Promise<Page>;
  close(): Promise<void>;
}

/** Starts the demo stack with `modules` and a headless Chromium; `name` names the throwaway profile folder. */
export async function startConsoleBrowser(name: string, modules: NonNullable<EmulatorOptions["modules"]>): Promise<ConsoleBrowser> {
  const stack = await startDevStack({ port: 0, logLevel: "error", emulator: { modules } });
  const base = stack.gateway.url;
  const profile = await mkdtemp(join(tmpdir(), `tollgate-${name}-`));
  const shots = process.env.CONSOLE_SCREENSHOTS === "docs" ? join(import.meta.dirname, "../../docs") : join(profile, "shots");
  await mkdir(shots, { recursive: true });
  const browser = await puppeteer.launch({
    executablePath: "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run", `--user-data-dir=${join(profile, "user-data")}`],
  });
  const consoleUrl = (path = "") => `${base}/_tollgate/console${path}`;
  return {
    stack,
    browser,
    base,
    shots,
    consoleUrl,
    async signIn(key, opts = {}) {
      const context = await browser.createBrowserContext();
      const page = await context.newPage();
      await page.setViewport({ width: 1280, height: 800 });
      if (opts.acceptDialogs) page.on("dialog", (d) => void d.accept());
      await page.goto(consoleUrl("/login"));
      await page.type("#key", key);
      await Promise.all([page.waitForNavigation(), page.click("button[type=submit]")]);
      return page;
    },
    async close() {
      await browser.close();
      await stack.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}
