// What of a browser's state outlives it: its user-data directory (copied, never shared) and its cookies (via CDP).
import { execFile } from "node:child_process";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import type { CdpConnection } from "./cdp-connection.js";

const run = promisify(execFile);

/** The file in a saved user-data directory holding its cookies as CDP `Network.CookieParam`s. */
export const COOKIE_FILE = "tollgate-cookies.json";

/**
 * Copies a user-data directory, without Chromium's per-process lock files. The source may belong to a running
 * browser, whose files can vanish mid-copy: cp then reports them and copies the rest, which is what we want.
 */
export async function copyUserData(from: string, to: string): Promise<void> {
  await rm(to, { recursive: true, force: true });
  await mkdir(to, { recursive: true });
  await run("/usr/bin/cp", ["-a", "--reflink=auto", `${from}/.`, to]).catch(() => {});
  await Promise.all(
    ["SingletonLock", "SingletonSocket", "SingletonCookie", "DevToolsActivePort"].map((f) => rm(join(to, f), { force: true })),
  );
}

/**
 * Saves the browser's cookies into `dir`. Chromium writes its cookie database lazily, so a copied profile alone can
 * miss the cookies of the last seconds; this file is what a later browser restores from.
 */
export async function saveCookies(cdp: CdpConnection, dir: string): Promise<number> {
  const { cookies } = await cdp.send<{ cookies: Array<Record<string, unknown>> }>("Storage.getCookies", {}, undefined, 5000);
  const params = cookies.map(({ size: _s, session, expires, ...rest }) => (session ? rest : { ...rest, expires }));
  await writeFile(join(dir, COOKIE_FILE), JSON.stringify(params));
  return params.length;
}

/** Restores cookies saved by saveCookies() into a freshly launched browser; a missing file means none. */
export async function restoreCookies(cdp: CdpConnection, dir: string): Promise<number> {
  const text = await readFile(join(dir, COOKIE_FILE), "utf8").catch(() => undefined);
  if (!text) return 0;
  const cookies = JSON.parse(text) as unknown[];
  if (!cookies.length) return 0;
  try {
    await cdp.send("Storage.setCookies", { cookies }, undefined, 5000);
    return cookies.length;
  } catch {
    // One cookie this Chromium will not take must not cost the others (or the session): set them one by one.
    let set = 0;
    for (const cookie of cookies)
      set += await cdp.send("Storage.setCookies", { cookies: [cookie] }, undefined, 5000).then(
        () => 1,
        () => 0,
      );
    return set;
  }
}
