// One sandbox's isolation: a bubblewrap process holding fresh pid/net/mount/ipc/uts namespaces, entered with nsenter.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readdir, readFile, readlink } from "node:fs/promises";
import { SANDBOX_GID, SANDBOX_UID } from "./images.js";

export const BWRAP = "/usr/bin/bwrap";

export interface Isolation {
  /** bwrap works at all (mount + pid namespaces). */
  available: boolean;
  /** A private network namespace per sandbox (else sandboxes share the host's loopback). */
  privateNetwork: boolean;
  reason?: string;
}

/** Checks once what this machine allows, so a missing feature degrades with a logged warning instead of failing late. */
export function probeIsolation(): Isolation {
  if (typeof process.getuid === "function" && process.getuid() !== 0) {
    return { available: false, privateNetwork: false, reason: "the emulator must run as root to enter sandbox namespaces (nsenter)" };
  }
  const base = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"];
  const full = spawnSync(BWRAP, [...base, "--unshare-net", "/usr/bin/true"], { timeout: 5000 });
  if (full.status === 0) return { available: true, privateNetwork: true };
  const noNet = spawnSync(BWRAP, [...base, "/usr/bin/true"], { timeout: 5000 });
  const why = String(full.stderr ?? full.error ?? "").trim();
  if (noNet.status === 0) return { available: true, privateNetwork: false, reason: `no network namespace: ${why}` };
  return { available: false, privateNetwork: false, reason: `bubblewrap failed: ${why || String(noNet.stderr ?? noNet.error)}` };
}

export type SandboxUser = "user" | "root";

export interface JailOptions {
  id: string;
  /** Host directory mounted read-write as the sandbox's `/`. */
  rootDir: string;
  /** Host directory mounted at /run/tollgate/sock (the in-sandbox agent's unix socket). */
  sockDir: string;
  /** The agent script, mounted read-only at /run/tollgate/agent.mjs. */
  agentPath: string;
  isolation: Isolation;
  /** Host directories bound inside (volumes); each mount point must already exist under rootDir. */
  mounts?: Array<{ hostDir: string; path: string; readOnly: boolean }>;
}

export const AGENT_IN_SANDBOX = "/run/tollgate/agent.mjs";

export class Jail {
  private readonly groups = new Set<number>();
  private exited: Promise<void>;
  onExit?: () => void;

  private constructor(
    readonly bwrap: ChildProcess,
    /** Host PID of the sandbox's PID-namespace init. */
    readonly initPid: number,
    /** `pid:[inode]` of the sandbox's PID namespace, used to prove nothing is left after stop. */
    readonly pidNamespace: string,
  ) {
    this.exited = new Promise((resolve) => bwrap.once("exit", () => resolve()));
    void this.exited.then(() => this.onExit?.());
  }

  static async start(opts: JailOptions): Promise<Jail> {
    const args = [
      "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
      ...(opts.isolation.privateNetwork ? ["--unshare-net"] : []),
      "--hostname", opts.id.replace(/_/g, "-").slice(0, 63),
      "--info-fd", "3",
      "--bind", opts.rootDir, "/",
      "--ro-bind", "/usr", "/usr",
      ...(opts.mounts ?? []).flatMap((m) => [m.readOnly ? "--ro-bind" : "--bind", m.hostDir, m.path]),
      "--proc", "/proc", "--dev", "/dev",
      "--ro-bind", opts.agentPath, AGENT_IN_SANDBOX,
      "--bind", opts.sockDir, "/run/tollgate/sock",
      "--chdir", "/",
      "--", "/usr/bin/sleep", "infinity",
    ];
    // Own process group, so stop() can signal bwrap and everything it forked in one call.
    const child = spawn(BWRAP, args, { detached: true, stdio: ["ignore", "ignore", "pipe", "pipe"], env: { PATH: "/usr/bin:/bin" } });
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const info = await new Promise<{ "child-pid": number }>((resolve, reject) => {
      let buf = "";
      const fail = (why: string) => reject(new Error(`sandbox ${opts.id} failed to start: ${why}${stderr ? `: ${stderr.trim()}` : ""}`));
      const timer = setTimeout(() => fail("timed out waiting for bubblewrap"), 10_000);
      (child.stdio[3] as NodeJS.ReadableStream).on("data", (d: Buffer) => {
        buf += d.toString();
        try {
          const parsed = JSON.parse(buf);
          clearTimeout(timer);
          resolve(parsed);
        } catch {
          /* partial JSON, keep reading */
        }
      });
      child.once("error", (e) => (clearTimeout(timer), fail(e.message)));
      child.once("exit", (code) => (clearTimeout(timer), fail(`bubblewrap exited with ${code}`)));
    });
    const initPid = info["child-pid"];
    const pidNamespace = await readlink(`/proc/${initPid}/ns/pid`);
    // bwrap reports the pid before it has built the mounts; its init forks the command only once they are ready.
    const deadline = Date.now() + 10_000;
    while (!(await readFile(`/proc/${initPid}/task/${initPid}/children`, "utf8").catch(() => "")).trim()) {
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`sandbox ${opts.id} did not finish setting up: ${stderr.trim()}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    return new Jail(child, initPid, pidNamespace);
  }

  get running(): boolean {
    return this.bwrap.exitCode === null && this.bwrap.signalCode === null;
  }

  /**
   * The argv prefix that runs a command inside the sandbox as `user`: all namespaces, the sandbox root, no
   * capabilities, no privilege gain through setuid binaries. The command then starts in `cwd`.
   */
  enterArgv(user: SandboxUser, cwd: string): string[] {
    const uid = user === "root" ? 0 : SANDBOX_UID;
    const gid = user === "root" ? 0 : SANDBOX_GID;
    return [
      "/usr/bin/nsenter", "-t", String(this.initPid), "-m", "-u", "-i", "-n", "-p", "-r", "-w", "--",
      "/usr/bin/setpriv", `--reuid=${uid}`, `--regid=${gid}`, "--clear-groups", "--no-new-privs",
      "--bounding-set=-all", "--inh-caps=-all", "--",
      "/usr/bin/env", `--chdir=${cwd}`,
    ];
  }

  /** Remembers a process group started inside, so stop() can kill it even if its nsenter parent is still around. */
  track(pgid: number | undefined): void {
    if (pgid) this.groups.add(pgid);
  }

  untrack(pgid: number | undefined): void {
    if (pgid) this.groups.delete(pgid);
  }

  /** Kills the namespace init (the kernel then kills every process in the PID namespace) and waits until none is left. */
  async stop(): Promise<void> {
    // Kill the namespace init, not bwrap: bwrap then reaps it and exits by itself, so no zombie is handed to the
    // host's init. bwrap itself is only killed if it does not follow within a second.
    try {
      process.kill(this.initPid, "SIGKILL");
    } catch {
      /* already gone */
    }
    const fallback = setTimeout(() => this.bwrap.pid && signalGroup(this.bwrap.pid, "SIGKILL"), 1000);
    await this.exited;
    clearTimeout(fallback);
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline && (await this.remainingPids()).length > 0) await new Promise((r) => setTimeout(r, 10));
    // Whatever nsenter parent is still around has nothing left to wait for.
    for (const pgid of this.groups) signalGroup(pgid, "SIGKILL");
    this.groups.clear();
  }

  /** Host PIDs still living in the sandbox's PID namespace (empty once stopped). */
  async remainingPids(): Promise<number[]> {
    const out: number[] = [];
    for (const name of await readdir("/proc").catch(() => [] as string[])) {
      if (!/^\d+$/.test(name)) continue;
      const ns = await readlink(`/proc/${name}/ns/pid`).catch(() => "");
      if (ns !== this.pidNamespace) continue;
      const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => "");
      if (stat && !/\) Z /.test(stat)) out.push(Number(name));
    }
    return out;
  }
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}
