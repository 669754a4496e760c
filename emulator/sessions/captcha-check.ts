// Captcha evaluation: looks for the known captcha widgets in open tabs (on request, or after every page load while
// solving is on) and logs what it finds. The emulator solves none; a found captcha is logged as detected, then as an error.
import type { CdpEvent } from "./cdp-connection.js";
import type { PageTracker } from "./page-tracker.js";
import type { SessionEventLogs } from "./session-events.js";

export const CAPTCHA_TYPES = ["turnstile", "cloudflare-challenge", "aliexpress", "recaptcha", "recaptcha-visual", "amazon"] as const;
export type CaptchaType = (typeof CAPTCHA_TYPES)[number];

/** Which widgets are on the page, by the selectors and frame sources each vendor uses. */
const DETECT = `(() => {
  const has = (sel) => !!document.querySelector(sel);
  const found = [];
  if (has('.cf-turnstile, iframe[src*="challenges.cloudflare.com/cdn-cgi/challenge-platform"][src*="turnstile"]')) found.push("turnstile");
  if (has('#challenge-form, #cf-challenge-running, script[src*="/cdn-cgi/challenge-platform/"]')) found.push("cloudflare-challenge");
  if (has('#nc_1_n1z, .nc-container, iframe[src*="aliexpress"][src*="punish"]')) found.push("aliexpress");
  if (has('.g-recaptcha, iframe[src*="google.com/recaptcha"], iframe[src*="recaptcha.net/recaptcha"]')) found.push("recaptcha");
  if (has('iframe[src*="recaptcha"][src*="bframe"]')) found.push("recaptcha-visual");
  if (has('#captchacharacters, iframe[src*="awswaf"], #amzn-captcha-verify-button')) found.push("amazon");
  return found;
})()`;

export interface CaptchaEvaluationParams {
  captcha?: CaptchaType;
  iterations: number;
}

/** The captcha widgets on one tab, among `among`; a tab that went away or cannot run scripts has none. */
async function detectOn(pages: PageTracker, targetId: string, among: readonly CaptchaType[]): Promise<CaptchaType[]> {
  try {
    const sessionId = await pages.sessionFor(targetId);
    const { result } = await pages.cdp.send<{ result: { value?: CaptchaType[] } }>(
      "Runtime.evaluate",
      { expression: DETECT, returnByValue: true },
      sessionId,
      10_000,
    );
    return (result.value ?? []).filter((t) => among.includes(t));
  } catch {
    return [];
  }
}

function logFound(events: SessionEventLogs, page: { targetId: string; url: string }, found: CaptchaType[]): void {
  for (const captcha of found) {
    events.record("captcha_detected", { targetId: page.targetId, pageUrl: page.url, metadata: { captcha } });
    events.record("captcha_error", {
      targetId: page.targetId,
      pageUrl: page.url,
      metadata: { captcha, error: "The emulator does not solve captchas" },
    });
  }
}

/**
 * While `solving()` is true, checks each tab after every page load (`Page.loadEventFired`) and logs the captchas it
 * finds, once per tab, URL and kind, as the upstream's solver reports what it meets. Started on the first enable.
 */
export function watchCaptchas(pages: PageTracker, events: SessionEventLogs, solving: () => boolean): void {
  const targetsBySession = new Map<string, string>();
  const seen = new Set<string>();
  pages.cdp.on("event", (e: CdpEvent) => {
    if (e.method !== "Page.loadEventFired" || !e.sessionId || !solving()) return;
    const targetId = targetsBySession.get(e.sessionId);
    if (!targetId) return;
    void (async () => {
      const page = (await pages.refreshed().catch(() => [])).find((p) => p.targetId === targetId);
      if (!page) return;
      const found = (await detectOn(pages, targetId, CAPTCHA_TYPES)).filter((c) => !seen.has(`${targetId} ${page.url} ${c}`));
      for (const c of found) seen.add(`${targetId} ${page.url} ${c}`);
      logFound(events, page, found);
    })();
  });
  pages.onPage((targetId) => {
    void (async () => {
      try {
        const sessionId = await pages.sessionFor(targetId);
        targetsBySession.set(sessionId, targetId);
        await pages.cdp.send("Page.enable", {}, sessionId);
      } catch {
        // The tab may already be gone.
      }
    })();
  });
}

export async function evaluateCaptchas(pages: PageTracker, events: SessionEventLogs, params: CaptchaEvaluationParams) {
  const checked: CaptchaType[] = params.captcha ? [params.captcha] : [...CAPTCHA_TYPES];
  const results = [];
  for (const page of await pages.refreshed()) {
    const found = await detectOn(pages, page.targetId, checked);
    logFound(events, page, found);
    results.push({
      url: page.url,
      targetId: page.targetId,
      iterationsRun: 1,
      solved: false,
      solvedCaptchas: [],
      checkedCaptchas: checked,
      captchaSolvedCounts: {},
      lastSolveTime: {},
      detectedCaptchas: found,
    });
  }
  return {
    success: true as const,
    captcha: params.captcha ?? null,
    iterationsRequested: params.iterations,
    iterationsRun: results.length ? 1 : 0,
    solved: false,
    solvedCaptchas: [],
    pages: results,
  };
}
