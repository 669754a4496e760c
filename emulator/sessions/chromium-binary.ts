// Finds a Chromium executable: CHROMIUM_PATH, then Debian's /usr/bin/chromium, then the npm-shipped @sparticuz/chromium.
import { access, constants } from "node:fs/promises";
import { SessionError } from "./session-error.js";

export interface ChromiumBinary {
  path: string;
  /** Where it came from, for logs and the README. */
  source: "CHROMIUM_PATH" | "system" | "@sparticuz/chromium";
}

const SYSTEM_CANDIDATES = ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"];

async function executable(path: string): Promise<boolean> {
  try {
    await access(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function fromSparticuz(): Promise<string | undefined> {
  try {
    const mod = (await import("@sparticuz/chromium")) as { default?: { executablePath(): Promise<string> } };
    const path = await mod.default?.executablePath();
    return path && (await executable(path)) ? path : undefined;
  } catch {
    return undefined;
  }
}

export const CHROMIUM_MISSING_HINT =
  "No Chromium found to run browser sessions: install one with `apt-get install -y chromium`, " +
  "set CHROMIUM_PATH to a Chromium/Chrome binary, or keep the `@sparticuz/chromium` dev dependency installed (npm ci).";

export interface LocateOptions {
  env?: NodeJS.ProcessEnv;
  /** System paths tried in order; tests pass [] to exercise the npm fallback. */
  systemCandidates?: string[];
}

/** Looks the binary up without caching. */
export async function locateChromium(opts: LocateOptions = {}): Promise<ChromiumBinary> {
  const explicit = (opts.env ?? process.env).CHROMIUM_PATH;
  if (explicit) {
    if (await executable(explicit)) return { path: explicit, source: "CHROMIUM_PATH" };
    throw new SessionError(503, "browser_unavailable", `CHROMIUM_PATH=${explicit} is not an executable file. ${CHROMIUM_MISSING_HINT}`);
  }
  for (const candidate of opts.systemCandidates ?? SYSTEM_CANDIDATES)
    if (await executable(candidate)) return { path: candidate, source: "system" };
  const npmPath = await fromSparticuz();
  if (npmPath) return { path: npmPath, source: "@sparticuz/chromium" };
  throw new SessionError(503, "browser_unavailable", CHROMIUM_MISSING_HINT);
}

let cached: Promise<ChromiumBinary> | undefined;

/** Resolves once per process; a failed lookup is not cached so an install can fix it without a restart. */
export function findChromium(): Promise<ChromiumBinary> {
  if (cached) return cached;
  const lookup = locateChromium();
  cached = lookup;
  lookup.catch(() => {
    if (cached === lookup) cached = undefined;
  });
  return lookup;
}
