// The CDP guard's rules and shapes (src/sessions/cdp-guard.ts runs them): the ids it keeps for itself, what a client may
// not read after a fill, and which pages a secret may be typed into.
import type { NavigationRefusal, PolicyLayer } from "../agent-policy/engine.js";

/** Command ids from here up are the gateway's: a client's are refused (Chromium's ids are 32-bit). */
export const OWN_ID_BASE = 1_900_000_000;
/** How long the guard waits for the browser to answer one of its commands. */
export const COMMAND_TIMEOUT_MS = 10_000;
/** Client messages held while the guard starts (a handful in practice: the client's first commands). */
export const MAX_HELD = 1000;

/** A tenant secret as the fill needs it: its value and the hosts (host[:port]) it may be typed into. */
interface BrowserSecret {
  value: string;
  hosts: string[];
}
export type BrowserSecretLookup = (name: string) => Promise<BrowserSecret | undefined>;

interface CdpGuardEvents {
  /** A target reached a refused URL and is being closed. `origin` has no path or query (they may carry tokens). */
  navigationClosed(e: { targetId: string; type: string; origin: string; refusal: NavigationRefusal }): void;
  /** A secret was typed into a page (never its value). */
  secretFilled(e: { name: string; origin: string; targetId: string }): void;
  /** A client command was refused by the guard after a fill. */
  readRefused?(e: { method: string; targetId: string }): void;
  /** The guard could not start; the connection is closed (fail closed). */
  failed(e: { reason: string }): void;
}

export interface CdpGuardOptions {
  /** The caller's policy layers; their `domains` rules make the navigation floor. None: no floor. */
  layers: PolicyLayer[];
  /** The tenant's secrets, for `Tollgate.fillSecret`; absent: the command is refused. */
  secrets?: BrowserSecretLookup;
  /**
   * Every value of the tenant's secrets, read as the guard starts: redacted from the first message on, so a value filled
   * on another connection to the same browser cannot be read on this one.
   */
  secretValues?: () => Promise<string[]>;
  events: CdpGuardEvents;
}

/**
 * What a client may not send on a target after a secret was typed into it, until its main frame navigates: reads whose
 * results the redaction cannot see into (pixels, heap snapshots) or that bulk-read form state.
 */
export const REFUSED_AFTER_FILL = new Set([
  "Page.captureScreenshot",
  "Page.startScreencast",
  "Page.captureSnapshot",
  "DOMSnapshot.captureSnapshot",
  "DOMSnapshot.getSnapshot",
  "HeapProfiler.takeHeapSnapshot",
  "HeapProfiler.startSampling",
  "HeapProfiler.startTrackingHeapObjects",
  "Accessibility.getFullAXTree",
  "Accessibility.getPartialAXTree",
  "Accessibility.queryAXTree",
  "Accessibility.getChildAXNodes",
  "Accessibility.getRootAXNode",
  "Accessibility.getAXNodeAndAncestors",
  "Tracing.start",
]);

export interface CdpMessage {
  id?: unknown;
  method?: unknown;
  params?: Record<string, unknown> | null;
  sessionId?: unknown;
  result?: Record<string, unknown>;
  error?: { message?: string };
}
export interface TargetInfo {
  targetId: string;
  type: string;
  url: string;
  parentFrameId?: string;
}

export class CdpCommandError extends Error {}

/** A Tollgate.* command refused: the client gets a CDP error with this message. */
export class FillRefused extends Error {}

export function originOf(url: string): string {
  try {
    const u = new URL(url);
    return u.origin !== "null" ? u.origin : `${u.protocol}`;
  } catch {
    return url.slice(0, 32);
  }
}

/** Whether a page at `url` may receive a secret naming `hosts` (host[:port]; no port: the scheme's default port). */
export function secretHostMatches(hosts: readonly string[], url: string): boolean {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return false;
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") return false;
  const host = u.hostname.toLowerCase().replace(/^\[(.*)\]$/, "$1");
  const loopback = host === "localhost" || host === "::1" || /^127\./.test(host);
  // Typed into a page served in the clear, the value would cross the network in the clear: loopback only.
  if (u.protocol === "http:" && !loopback) return false;
  const port = u.port || (u.protocol === "https:" ? "443" : "80");
  return hosts.some((entry) => {
    const m = /^\[?([^\]]*?)\]?(?::(\d+))?$/.exec(entry.trim().toLowerCase());
    if (!m) return false;
    const [, h, p] = m;
    return h === host && (p ?? (u.protocol === "https:" ? "443" : "80")) === port;
  });
}
