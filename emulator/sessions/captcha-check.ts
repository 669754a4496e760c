// Manual captcha evaluation: looks for the known captcha widgets in every open tab and logs what it finds.
// The emulator solves none; a found captcha is logged as detected and then as an error.
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

export async function evaluateCaptchas(pages: PageTracker, events: SessionEventLogs, params: CaptchaEvaluationParams) {
  const checked: CaptchaType[] = params.captcha ? [params.captcha] : [...CAPTCHA_TYPES];
  const results = [];
  for (const page of await pages.refreshed()) {
    let found: CaptchaType[] = [];
    try {
      const sessionId = await pages.sessionFor(page.targetId);
      const { result } = await pages.cdp.send<{ result: { value?: CaptchaType[] } }>("Runtime.evaluate", { expression: DETECT, returnByValue: true }, sessionId, 10_000);
      found = (result.value ?? []).filter((t) => checked.includes(t));
    } catch {
      // A tab that went away or cannot run scripts has nothing to report.
    }
    for (const captcha of found) {
      events.record("captcha_detected", { targetId: page.targetId, pageUrl: page.url, metadata: { captcha } });
      events.record("captcha_error", { targetId: page.targetId, pageUrl: page.url, metadata: { captcha, error: "The emulator does not solve captchas" } });
    }
    results.push({
      url: page.url, targetId: page.targetId, iterationsRun: 1, solved: false, solvedCaptchas: [], checkedCaptchas: checked,
      captchaSolvedCounts: {}, lastSolveTime: {}, detectedCaptchas: found,
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
