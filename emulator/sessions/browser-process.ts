// One headless Chromium as a child process in its own process group: launch, find its DevTools socket, kill it whole.
import { spawn, type ChildProcess } from "node:child_process";
import { readdir, readFile } from "node:fs/promises";
import type { ChromiumBinary } from "./chromium-binary.js";
import { SessionError } from "./session-error.js";
import { guardGroup, releaseGroup } from "../reaper.js";

export interface BrowserLaunchOptions {
  binary: ChromiumBinary;
  userDataDir: string;
  width: number;
  height: number;
  /** Unpacked extensions to load (each a directory with a manifest.json). */
  extensionDirs?: string[];
  /** Fails the launch when DevTools has not answered by then. */
  startTimeoutMs?: number;
  /** Further switches, e.g. the job browser's host-resolver rules. */
  extraArgs?: string[];
}

export interface BrowserProcess {
  pid: number;
  /** Browser-level CDP endpoint, `ws://127.0.0.1:<port>/devtools/browser/<uuid>`. Never handed to clients. */
  cdpUrl: string;
  /** Resolves with the exit code/signal once the main process is gone. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Terminates the whole process group and waits until no member is left. */
  kill(): Promise<void>;
}

function launchArgs(opts: BrowserLaunchOptions): string[] {
  const args = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    `--user-data-dir=${opts.userDataDir}`,
    `--window-size=${opts.width},${opts.height}`,
    ...(opts.extraArgs ?? []),
  ];
  if (opts.extensionDirs?.length) {
    const dirs = opts.extensionDirs.join(",");
    // Chromium 137+ ignores --load-extension unless this feature is turned off.
    args.push(
      `--load-extension=${dirs}`,
      `--disable-extensions-except=${dirs}`,
      "--disable-features=DisableLoadExtensionCommandLineSwitch",
    );
  }
  // Full Chromium's new headless mode draws window UI; kiosk mode on a virtual screen of the requested size makes
  // the page viewport equal the screen, as on the upstream's virtual display. headless-shell has no UI to remove.
  if (opts.binary.source !== "@sparticuz/chromium") args.push("--kiosk", `--screen-info={${opts.width}x${opts.height}}`);
  else args.push("--no-zygote");
  args.push("about:blank");
  return args;
}

/** PIDs whose process group is `pgid`, excluding zombies (they are dead and only wait for a reaper). */
export async function livingGroupMembers(pgid: number): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, "utf8").catch(() => "");
    // Fields after the parenthesised command: state ppid pgrp ...
    const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (rest.length > 2 && Number(rest[2]) === pgid && rest[0] !== "Z" && rest[0] !== "X") pids.push(Number(entry));
  }
  return pids;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// Browsers outlive their parent unless told otherwise: if this process exits without closing the emulator (a test
// worker torn down on a timeout, process.exit()), the groups still running are killed on the way out.
const liveGroups = new Set<number>();
let exitHookInstalled = false;
function trackGroup(pgid: number): void {
  liveGroups.add(pgid);
  // And if this process is killed outright (SIGKILL, OOM), the watchdog ends the group.
  guardGroup(pgid);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once("exit", () => {
    for (const g of liveGroups) signalGroup(g, "SIGKILL");
  });
}

export async function launchBrowser(opts: BrowserLaunchOptions): Promise<BrowserProcess> {
  const child: ChildProcess = spawn(opts.binary.path, launchArgs(opts), {
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
    env: { ...process.env, CHROME_LOG_FILE: "/dev/null" },
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => resolve({ code, signal }));
    child.once("error", () => resolve({ code: -1, signal: null }));
  });
  const pid = child.pid;
  if (pid !== undefined) trackGroup(pid);
  let mainExited = false;
  void exited.then(() => (mainExited = true));
  const kill = async () => {
    if (pid === undefined) return;
    // Without the browser process to coordinate shutdown, its orphans only go away reliably with SIGKILL.
    signalGroup(pid, mainExited ? "SIGKILL" : "SIGTERM");
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline && (await livingGroupMembers(pid)).length > 0) await sleep(50);
    if ((await livingGroupMembers(pid)).length > 0) signalGroup(pid, "SIGKILL");
    while ((await livingGroupMembers(pid)).length > 0 && Date.now() < deadline + 3000) await sleep(50);
    await Promise.race([exited, sleep(1000)]);
    const left = await livingGroupMembers(pid);
    if (left.length === 0) {
      liveGroups.delete(pid);
      releaseGroup(pid);
    }
    if (left.length > 0) throw new Error(`browser process group ${pid} still has members: ${left.join(", ")}`);
  };

  let stderrTail = "";
  const cdpUrl = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(`Chromium did not open DevTools within ${opts.startTimeoutMs ?? 20000} ms`),
      opts.startTimeoutMs ?? 20000,
    );
    const onError = (err: Error) => fail(`Chromium could not be started: ${err.message}`);
    const onExit = (code: number | null, signal: string | null) =>
      fail(`Chromium exited before DevTools was ready (code ${code}, signal ${signal})`);
    function fail(why: string) {
      clearTimeout(timer);
      child.stderr?.removeAllListeners("data");
      child.off("error", onError).off("exit", onExit);
      reject(
        new SessionError(
          503,
          "browser_unavailable",
          `${why} (${opts.binary.path}). ${stderrTail.trim().split("\n").slice(-3).join(" | ")}`,
        ),
      );
    }
    child.once("error", onError);
    child.once("exit", onExit);
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderrTail = (stderrTail + chunk).slice(-4000);
      const m = /DevTools listening on (ws:\/\/\S+)/.exec(stderrTail);
      if (!m) return;
      clearTimeout(timer);
      child.off("error", onError).off("exit", onExit);
      resolve(m[1]);
    });
  }).catch(async (err) => {
    await kill().catch(() => {});
    throw err;
  });
  // Keep draining stderr so Chromium never blocks on a full pipe.
  child.stderr?.removeAllListeners("data");
  child.stderr?.resume();
  return { pid: pid!, cdpUrl, exited, kill };
}
