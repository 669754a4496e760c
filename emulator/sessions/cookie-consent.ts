// Best-effort `acceptCookies`: a page script that clicks the "accept" button of common consent banners.
// The upstream does this with its own (unpublished) rules; this covers the big consent platforms and plain buttons.
const SELECTORS = [
  "#onetrust-accept-btn-handler",
  "#CybotCookiebotDialogBodyLevelButtonLevelOptinAllowAll",
  "#CybotCookiebotDialogBodyButtonAccept",
  "#L2AGLb",
  ".cky-btn-accept",
  ".cc-allow",
  ".cc-accept-all",
  "[data-testid='uc-accept-all-button']",
  "[data-cookie-accept]",
  "button[aria-label*='accept' i]",
];

const WORDS =
  "^(accept|accept all|accept all cookies|accept cookies|allow all|allow all cookies|allow cookies|i agree|agree|agree and continue|i accept)$";

export const CONSENT_SCRIPT = `(() => {
  if (window.__emuConsent) return;
  window.__emuConsent = true;
  const selectors = ${JSON.stringify(SELECTORS)};
  const words = new RegExp(${JSON.stringify(WORDS)}, "i");
  const tryClick = () => {
    for (const s of selectors) {
      const el = document.querySelector(s);
      if (el instanceof HTMLElement) { el.click(); return true; }
    }
    for (const el of document.querySelectorAll("button, [role=button], input[type=button], input[type=submit]")) {
      const label = (el.textContent || el.value || "").trim().replace(/\\s+/g, " ");
      if (words.test(label)) { el.click(); return true; }
    }
    return false;
  };
  let tries = 0;
  const tick = () => { if (tryClick() || ++tries > 30) return; setTimeout(tick, 300); };
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", tick, { once: true });
  else tick();
})();`;
