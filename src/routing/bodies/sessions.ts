// Session bodies: the options a browser session is created with (also nested as `sessionOptions` in every job and
// agent task), and the bodies of the session routes. From the SDKs' CreateSessionParams (Node: dist/types/session.d.ts;
// Python: hyperbrowser/models/session.py). Enumerations (countries, locales, platforms…) are the upstream's to check:
// they name no resource, so they are declared as strings.
import * as z from "zod";
import { count, egressRules, fields, options, owned } from "./declare.js";

/** Longest timeout a body may ask for (7 days); a tenant's own limit is the quota's (`quotas.maxTimeoutMinutes`). */
export const MAX_TIMEOUT_MINUTES = 7 * 24 * 60;
/** Minutes may be fractional (the meter reserves whole minutes, rounded up); 0 ("no timeout" upstream) is refused. */
const timeoutMinutes = z.number().positive().max(MAX_TIMEOUT_MINUTES);

const strings = z.array(z.string().max(4096)).max(1000);
const screen = fields({ width: count(1, 10_000), height: count(1, 10_000) });

export const createSessionBody = options({
  useUltraStealth: z.boolean(),
  useStealth: z.boolean(),
  useProxy: z.boolean(),
  proxyServer: z.string(),
  proxyServerPassword: z.string(),
  proxyServerUsername: z.string(),
  proxyCountry: z.string(),
  proxyState: z.string(),
  proxyCity: z.string(),
  operatingSystems: strings,
  device: strings,
  platform: strings,
  locales: strings,
  screen,
  solveCaptchas: z.boolean(),
  solverType: z.string(),
  adblock: z.boolean(),
  trackers: z.boolean(),
  annoyances: z.boolean(),
  enableWebRecording: z.boolean(),
  enableVideoWebRecording: z.boolean(),
  enableLogCapture: z.boolean(),
  allowInternetAccess: z.boolean(),
  allowOut: egressRules(),
  denyOut: egressRules(),
  profile: options({ id: owned("profile"), persistChanges: z.boolean(), persistNetworkCache: z.boolean() }),
  extensionIds: z.array(owned("extension")).max(100),
  // A static IP is the operator's account resource, shared by its tenants like the image catalog.
  staticIpId: z.string(),
  acceptCookies: z.boolean(),
  urlBlocklist: strings,
  browserArgs: strings,
  disabledExternalProtocols: strings,
  saveDownloads: z.boolean(),
  imageCaptchaParams: z.array(fields({ imageSelector: z.string(), inputSelector: z.string() })).max(100),
  timeoutMinutes,
  enableWebglFingerprinting: z.boolean(),
  enableWindowManager: z.boolean(),
  enableWindowManagerTaskbar: z.boolean(),
  region: z.string(),
  viewOnlyLiveView: z.boolean(),
  allowOnGeolocationPrompt: z.boolean(),
  disablePasswordManager: z.boolean(),
  enableAlwaysOpenPdfExternally: z.boolean(),
  appendTimestampToDownloads: z.boolean(),
  showScrollbars: z.boolean(),
  liveViewTtlSeconds: count(1, 7 * 24 * 3600),
  replaceNativeElements: z.boolean(),
  disablePostQuantumKeyAgreement: z.boolean(),
  browserMemorySize: z.string(),
  startFromSnapshot: fields({ snapshotId: owned("snapshot") }),
});

/** PUT /api/session/:id/extend-session */
export const extendSessionBody = fields({ durationMinutes: count(1, 24 * 60) });

/** PUT /api/session/:id/update: `type` says which settings `params` changes. */
export const updateSessionBody = z.discriminatedUnion("type", [
  fields({ type: z.literal("profile"), params: options({ persistChanges: z.boolean(), persistNetworkCache: z.boolean() }) }),
  fields({
    type: z.literal("proxy"),
    params: fields({
      enabled: z.boolean(),
      staticIpId: z.string().nullish(),
      location: options({ country: z.string(), state: z.string(), city: z.string() }).nullish(),
    }),
  }),
  fields({ type: z.literal("screen"), params: screen }),
  fields({ type: z.literal("solveCaptchas"), params: options({ enabled: z.boolean(), solverType: z.string() }) }),
]);

/** POST /api/session/:id/captcha/evaluate */
export const captchaBody = options({
  captcha: z.string(),
  captchaType: z.string(),
  text: z.string(),
  iterations: count(1, 100),
  maxIterations: count(1, 100),
  solverType: z.string(),
  imageCaptchaParams: z.array(fields({ imageSelector: z.string(), inputSelector: z.string() })).max(100),
  useGeminiCaptchaSolver: z.boolean(),
  useUltraStealth: z.boolean(),
});

/** POST /api/session/:id/snapshot: the SDK sends `{}`. */
export const sessionSnapshotBody = fields({});

const point = fields({ x: z.number(), y: z.number() });
const shot = { returnScreenshot: z.boolean().optional() };
const button = z.string().optional();

/** POST /_tollgate/computer-action/:id: one action, by its `action`. */
export const computerActionBody = z.discriminatedUnion("action", [
  fields({ action: z.literal("click"), x: z.number(), y: z.number(), button, numClicks: count(1, 10).optional(), ...shot }),
  fields({ action: z.literal("type_text"), text: z.string(), ...shot }),
  fields({ action: z.literal("press_keys"), keys: z.array(z.string()).max(100), ...shot }),
  fields({ action: z.literal("move_mouse"), x: z.number(), y: z.number(), ...shot }),
  fields({ action: z.literal("drag"), path: z.array(point).max(10_000), ...shot }),
  fields({ action: z.literal("scroll"), x: z.number(), y: z.number(), scrollX: z.number(), scrollY: z.number(), ...shot }),
  fields({ action: z.literal("screenshot"), ...shot }),
  fields({ action: z.literal("hold_key"), key: z.string(), duration: z.number().min(0).max(60_000), ...shot }),
  fields({ action: z.literal("mouse_down"), button, ...shot }),
  fields({ action: z.literal("mouse_up"), button, ...shot }),
  fields({ action: z.literal("get_clipboard_text"), ...shot }),
  fields({ action: z.literal("put_selection_text"), text: z.string(), ...shot }),
  fields({ action: z.literal("list_windows"), ...shot }),
]);

/**
 * POST /x402/session: the upstream documents screen, viewOnlyLiveView and timeoutMinutes (5–60) and refuses unknown
 * fields itself; the rest of a session's options are declared as for /api/session, so any id they name is checked.
 */
export const x402SessionBody = createSessionBody.extend({ timeoutMinutes: count(5, 60).nullish() });
