// One sandbox's isolation: a bubblewrap process holding fresh pid/net/mount/ipc/uts namespaces, plus a user namespace
// in which the sandbox's root holds its capabilities; everything enters with nsenter.
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readdir, readFile, readlink } from "node:fs/promises";
import { promisify } from "node:util";
import type { SandboxCgroup, CgroupSupport } from "./cgroups.js";
import { freeSlot, idMap, idmapMounts, probeIdmappedMounts, startUserNamespace, takeSlot } from "./userns.js";
import { SANDBOX_GID, SANDBOX_UID } from "./images.js";
import { guardGroup, releaseGroup } from "../reaper.js";
import { LXCFS_PROC_FILES } from "./sizes.js";

const run = promisify(execFile);

export const BWRAP = "/usr/bin/bwrap";

export interface Isolation {
  /** bwrap works at all (mount + pid namespaces). */
  available: boolean;
  /** A private network namespace per sandbox (else sandboxes share the host's loopback). */
  privateNetwork: boolean;
  /**
   * Each sandbox gets its own user namespace, where root holds its capabilities and sudo works. Without one, root
   * inside runs with no capability at all and setuid programs cannot elevate (sudo fails): degraded, logged.
   */
  userNamespace: boolean;
  /**
   * The sandbox's ids are shifted onto a host range of its own, its mounts id-mapped through its user namespace (see
   * userns.ts). Without id-mapped mounts the map is the identity: root inside is host uid 0 for file ownership (logged).
   */
  idmappedMounts: boolean;
  /** Sizes (memMiB, vcpus) enforced through cgroups, and with which version. */
  cgroups: CgroupSupport;
  reason?: string;
  /** LXCFS's mount point: its /proc files are bound over the sandbox's (memory, CPUs, uptime as the cgroup has them). */
  lxcfs?: string;
  /** Each sandbox's `/` is a filesystem of diskSizeMiB (sizes.ts); false: a plain directory of the host's disk. */
  disks?: boolean;
}

/**
 * Checks once what this machine allows, so a missing feature degrades with a logged warning instead of failing late.
 * `dirs` are the host directories whose mounts sandboxes see besides /usr (state dir, agent script's directory).
 */
export function probeIsolation(cgroups: CgroupSupport, dirs: string[] = []): Isolation {
  if (typeof process.getuid === "function" && process.getuid() !== 0) {
    return {
      available: false,
      privateNetwork: false,
      userNamespace: false,
      idmappedMounts: false,
      cgroups,
      reason: "the emulator must run as root to enter sandbox namespaces (nsenter)",
    };
  }
  const probe = spawnSync("/usr/bin/unshare", ["--user", "/usr/bin/true"], { timeout: 5000 });
  const userNamespace = probe.status === 0;
  const noUserns = userNamespace
    ? ""
    : `no user namespaces (root inside has no capability, sudo fails): ${String(probe.stderr ?? probe.error).trim()}`;
  // idmap.pl speaks x86_64 system call numbers.
  const idmap = userNamespace ? probeIdmappedMounts(dirs) : undefined;
  const idmappedMounts = idmap === "";
  const noIdmap =
    !userNamespace || idmappedMounts
      ? ""
      : `no id-mapped mounts (sandbox ids map to the same host ids: root inside is host uid 0 for file ownership): ${idmap}`;
  const userReason = [noUserns, noIdmap].filter(Boolean).join("; ");
  const base = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev"];
  const full = spawnSync(BWRAP, [...base, "--unshare-net", "/usr/bin/true"], { timeout: 5000 });
  if (full.status === 0)
    return { available: true, privateNetwork: true, userNamespace, idmappedMounts, cgroups, ...(userReason ? { reason: userReason } : {}) };
  const noNet = spawnSync(BWRAP, [...base, "/usr/bin/true"], { timeout: 5000 });
  const why = String(full.stderr ?? full.error ?? "").trim();
  if (noNet.status === 0)
    return {
      available: true,
      privateNetwork: false,
      userNamespace,
      idmappedMounts,
      cgroups,
      reason: [`no network namespace: ${why}`, userReason].filter(Boolean).join("; "),
    };
  return {
    available: false,
    privateNetwork: false,
    userNamespace,
    idmappedMounts,
    cgroups,
    reason: `bubblewrap failed: ${why || String(noNet.stderr ?? noNet.error)}`,
  };
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
  /** The sandbox's cgroups: bwrap and every process entering join them. */
  cgroup: SandboxCgroup;
}

/** The sandbox's host name: its id as a DNS label. */
export const hostnameOf = (id: string) => id.replace(/_/g, "-").slice(0, 63);

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
    /** Host PID of the process holding the sandbox's user namespace (it lives in the sandbox's PID namespace). */
    readonly userNsPid: number | undefined,
    readonly cgroup: SandboxCgroup,
    /** The sandbox's host id range (see userns.ts), released at stop; undefined with the identity map. */
    private readonly idSlot: number | undefined,
  ) {
    this.exited = new Promise((resolve) => bwrap.once("exit", () => resolve()));
    void this.exited.then(() => this.onExit?.());
  }

  static async start(opts: JailOptions): Promise<Jail> {
    const args = [
      "--die-with-parent",
      "--unshare-pid",
      "--unshare-ipc",
      "--unshare-uts",
      "--unshare-cgroup-try",
      ...(opts.isolation.privateNetwork ? ["--unshare-net"] : []),
      "--hostname",
      hostnameOf(opts.id),
      "--info-fd",
      "3",
      "--bind",
      opts.rootDir,
      "/",
      "--ro-bind",
      "/usr",
      "/usr",
      ...(opts.mounts ?? []).flatMap((m) => [m.readOnly ? "--ro-bind" : "--bind", m.hostDir, m.path]),
      "--proc",
      "/proc",
      ...(opts.isolation.lxcfs ? LXCFS_PROC_FILES.flatMap((f) => ["--ro-bind", `${opts.isolation.lxcfs}/proc/${f}`, `/proc/${f}`]) : []),
      "--dev",
      "/dev",
      "--ro-bind",
      opts.agentPath,
      AGENT_IN_SANDBOX,
      "--bind",
      opts.sockDir,
      "/run/tollgate/sock",
      "--chdir",
      "/",
      "--",
      "/usr/bin/sleep",
      "infinity",
    ];
    // Own process group, so stop() can signal bwrap and everything it forked in one call.
    const bwrapArgv = opts.cgroup.wrap([BWRAP, ...args]);
    const child = spawn(bwrapArgv[0]!, bwrapArgv.slice(1), {
      detached: true,
      stdio: ["ignore", "ignore", "pipe", "pipe"],
      env: { PATH: "/usr/bin:/bin" },
    });
    // --die-with-parent ends bwrap with this process; the watchdog covers the rest of its group all the same.
    guardGroup(child.pid);
    child.once("exit", () => releaseGroup(child.pid));
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
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(`sandbox ${opts.id} did not finish setting up: ${stderr.trim()}`);
      await new Promise((r) => setTimeout(r, 5));
    }
    const slot = opts.isolation.userNamespace && opts.isolation.idmappedMounts ? takeSlot() : undefined;
    try {
      // Without a user namespace, /usr stays nosuid: a setuid sudo would make the sandbox's user root on the host.
      await hardenMounts(initPid, opts.isolation.userNamespace);
      const userNsPid = opts.isolation.userNamespace ? await startUserNamespace(initPid, opts.cgroup, idMap(slot)) : undefined;
      if (userNsPid !== undefined && slot !== undefined) await idmapMounts(initPid, userNsPid, idmappedPoints(opts));
      return new Jail(child, initPid, pidNamespace, userNsPid, opts.cgroup, slot);
    } catch (err) {
      signalGroup(child.pid!, "SIGKILL");
      // Its processes may still hold the range until they are gone: wait for bwrap (it dies with its group).
      if (slot !== undefined)
        void new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r))).then(() => freeSlot(slot));
      throw new Error(`sandbox ${opts.id} failed to start: ${(err as Error).message}`);
    }
  }

  get running(): boolean {
    return this.bwrap.exitCode === null && this.bwrap.signalCode === null;
  }

  /**
   * The argv that runs a command inside the sandbox as `user`: it joins the sandbox's cgroups, then all its
   * namespaces (the user namespace last, so it holds capabilities there only), the sandbox root, and becomes `user`
   * with that user's groups. Root keeps its capabilities inside; the default user has none, but may gain root's
   * through `sudo` as on the real service. The command then starts in `cwd`.
   */
  enterArgv(user: SandboxUser, cwd: string): string[] {
    const uid = user === "root" ? 0 : SANDBOX_UID;
    const gid = user === "root" ? 0 : SANDBOX_GID;
    const namespaces = ["-t", String(this.initPid), "-m", "-u", "-i", "-n", "-p", "-r", "-w"];
    const identity = [`--reuid=${uid}`, `--regid=${gid}`, "--init-groups"];
    // Degraded (no user namespaces): every user, root included, without any capability or privilege gain.
    const privileges = this.userNsPid === undefined ? ["--no-new-privs", "--bounding-set=-all", "--inh-caps=-all"] : ["--inh-caps=-all"];
    const userNamespace = this.userNsPid === undefined ? [] : [`--user=/proc/${this.userNsPid}/ns/user`];
    return this.cgroup.wrap([
      "/usr/bin/nsenter",
      ...namespaces,
      ...userNamespace,
      "--",
      "/usr/bin/setpriv",
      ...identity,
      ...privileges,
      "--",
      "/usr/bin/env",
      `--chdir=${cwd}`,
    ]);
  }

  /** Remembers a process group started inside, so stop() can kill it even if its nsenter parent is still around. */
  track(pgid: number | undefined): void {
    if (!pgid) return;
    this.groups.add(pgid);
    guardGroup(pgid);
  }

  untrack(pgid: number | undefined): void {
    if (!pgid) return;
    this.groups.delete(pgid);
    releaseGroup(pgid);
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
    for (const pgid of this.groups) {
      signalGroup(pgid, "SIGKILL");
      releaseGroup(pgid);
    }
    this.groups.clear();
    await this.cgroup.remove();
    if (this.idSlot !== undefined) freeSlot(this.idSlot);
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

/**
 * Mounts the host must fix after bwrap: /usr may run setuid programs (sudo), and the kernel's global knobs under
 * /proc become read-only (with the identity map the sandbox's root is host uid 0 for file permissions, see userns.ts;
 * with a shifted one they are kept read-only all the same). The mount namespace belongs to the host's user
 * namespace, so the sandbox cannot undo either.
 */
async function hardenMounts(initPid: number, setuidUsr: boolean): Promise<void> {
  const script = [
    ...(setuidUsr ? ["mount -o remount,bind,ro,nodev /usr"] : []),
    // The writable kernel files whose only guard is "owned by uid 0" (bwrap already covers /proc/irq and /proc/bus).
    "for p in /proc/sys /proc/sysrq-trigger /proc/fs /proc/acpi; do",
    '  [ -e "$p" ] || continue',
    '  mount --bind "$p" "$p" && mount -o remount,bind,ro,nosuid,nodev,noexec "$p" || exit 1',
    "done",
  ].join("\n");
  await run("/usr/bin/nsenter", ["-t", String(initPid), "-m", "--", "/bin/sh", "-c", script], { timeout: 10_000 });
}

/**
 * The sandbox's mounts that are id-mapped: its root, /usr, /dev (bwrap's tmpfs), the agent script, the agent
 * socket directory and every volume. The rest (/proc and its read-only binds, /dev/pts, bwrap's device nodes) cannot
 * be: their files show as `nobody` inside, as in any unprivileged container.
 */
function idmappedPoints(opts: JailOptions): string[] {
  return ["/", "/usr", "/dev", AGENT_IN_SANDBOX, "/run/tollgate/sock", ...(opts.mounts ?? []).map((m) => m.path)];
}

export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}
