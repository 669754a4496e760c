// One sandbox's isolation: a bubblewrap process holding fresh pid/net/mount/ipc/uts namespaces, plus a user namespace
// in which the sandbox's root holds its capabilities; everything enters with nsenter.
import { execFile, spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readFileSync } from "node:fs";
import { open, readdir, readFile, readlink, writeFile } from "node:fs/promises";
import { posix } from "node:path";
import { promisify } from "node:util";
import type { SandboxCgroup, CgroupSupport } from "./cgroups.js";
import { SANDBOX_GID, SANDBOX_UID } from "./images.js";

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
   * ID_BASE). Without id-mapped mounts the map is the identity: root inside is host uid 0 for file ownership (logged).
   */
  idmappedMounts: boolean;
  /** Sizes (memMiB, vcpus) enforced through cgroups, and with which version. */
  cgroups: CgroupSupport;
  reason?: string;
}

/**
 * The sandbox's user namespace maps its ids 0..65535 onto host ids ID_BASE + slot × ID_COUNT + id, a range of its
 * own (slot: the lowest free one in this emulator process): root inside is an unprivileged host uid, holding its
 * capabilities only in this namespace; every other namespace (mount, pid, net...) belongs to the host's, so it cannot
 * mount, remount, or reach anything the jail does not show it (see README). Every file-backed mount it sees is an
 * id-mapped mount through the same namespace (idmap.pl), so files keep their ids on disk (root's are 0, the user's
 * 1000), show them inside, and setuid-root `sudo` from the shared /usr makes the caller the sandbox's root only.
 * Without id-mapped mounts the map is the identity (`0 0 65536`).
 */
const ID_BASE = 100_000;
const ID_COUNT = 65_536;
const MAX_SLOTS = 4096;
const usedSlots = new Set<number>();

function takeSlot(): number {
  for (let slot = 0; slot < MAX_SLOTS; slot++)
    if (!usedSlots.has(slot)) {
      usedSlots.add(slot);
      return slot;
    }
  throw new Error(`no free host id range (${MAX_SLOTS} sandboxes running)`);
}

const idMap = (slot: number | undefined) => `0 ${slot === undefined ? 0 : ID_BASE + slot * ID_COUNT} ${ID_COUNT}\n`;

/** Clones the sandbox's mounts id-mapped and re-roots it on them (or probes that the kernel can); see its header. */
const IDMAP_SCRIPT = readFileSync(new URL("./idmap.pl", import.meta.url), "utf8");
const PERL = "/usr/bin/perl";

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
  const idmap =
    userNamespace && process.arch === "x64"
      ? spawnSync(PERL, ["-e", IDMAP_SCRIPT, "probe", "/usr", ...dirs], { timeout: 5000 })
      : undefined;
  const idmappedMounts = idmap?.status === 0;
  const noIdmap =
    !userNamespace || idmappedMounts
      ? ""
      : `no id-mapped mounts (sandbox ids map to the same host ids: root inside is host uid 0 for file ownership): ${idmap ? String(idmap.stderr || idmap.error).trim() : `not on ${process.arch}`}`;
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
    /** The sandbox's host id range (see ID_BASE), released at stop; undefined with the identity map. */
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
        void new Promise((r) => (child.exitCode !== null ? r(null) : child.once("exit", r))).then(() => usedSlots.delete(slot));
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
    if (this.userNsPid === undefined) {
      // Degraded (no user namespaces): every user, root included, without any capability or privilege gain.
      return this.cgroup.wrap([
        "/usr/bin/nsenter",
        "-t",
        String(this.initPid),
        "-m",
        "-u",
        "-i",
        "-n",
        "-p",
        "-r",
        "-w",
        "--",
        "/usr/bin/setpriv",
        `--reuid=${uid}`,
        `--regid=${gid}`,
        "--init-groups",
        "--no-new-privs",
        "--bounding-set=-all",
        "--inh-caps=-all",
        "--",
        "/usr/bin/env",
        `--chdir=${cwd}`,
      ]);
    }
    return this.cgroup.wrap([
      "/usr/bin/nsenter",
      "-t",
      String(this.initPid),
      "-m",
      "-u",
      "-i",
      "-n",
      "-p",
      "-r",
      "-w",
      `--user=/proc/${this.userNsPid}/ns/user`,
      "--",
      "/usr/bin/setpriv",
      `--reuid=${uid}`,
      `--regid=${gid}`,
      "--init-groups",
      "--inh-caps=-all",
      "--",
      "/usr/bin/env",
      `--chdir=${cwd}`,
    ]);
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
    await this.cgroup.remove();
    if (this.idSlot !== undefined) usedSlots.delete(this.idSlot);
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
 * /proc become read-only (with the identity map the sandbox's root is host uid 0 for file permissions, see ID_BASE;
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
 * Starts the sandbox's user-namespace holder inside its PID namespace (so it dies with the sandbox) and writes its
 * id map (`map`, for uids and gids alike). Returns its host PID; processes join the namespace through
 * /proc/<pid>/ns/user.
 */
async function startUserNamespace(initPid: number, cgroup: SandboxCgroup, map: string): Promise<number> {
  const argv = cgroup.wrap([
    "/usr/bin/nsenter",
    "-t",
    String(initPid),
    "-m",
    "-p",
    "-r",
    "-w",
    "--",
    "/usr/bin/unshare",
    "--user",
    "--",
    "/usr/bin/sleep",
    "infinity",
  ]);
  const holder = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: "ignore", env: { PATH: "/usr/bin:/bin" } });
  holder.unref();
  const own = await readlink("/proc/self/ns/user");
  const deadline = Date.now() + 10_000;
  for (;;) {
    if (holder.exitCode !== null) throw new Error(`user namespace holder exited with ${holder.exitCode}`);
    // nsenter forks into the PID namespace; its child becomes unshare, then sleep.
    const kids = (await readFile(`/proc/${holder.pid}/task/${holder.pid}/children`, "utf8").catch(() => ""))
      .trim()
      .split(/\s+/)
      .filter(Boolean);
    const pid = Number(kids[0]);
    if (pid) {
      const ns = await readlink(`/proc/${pid}/ns/user`).catch(() => own);
      if (ns !== own) {
        await writeFile(`/proc/${pid}/uid_map`, map);
        await writeFile(`/proc/${pid}/gid_map`, map);
        return pid;
      }
    }
    if (Date.now() > deadline) throw new Error("timed out creating the user namespace");
    await new Promise((r) => setTimeout(r, 5));
  }
}

/**
 * The sandbox's mounts that are id-mapped: its root, /usr, /dev (bwrap's tmpfs), the agent script, the agent
 * socket directory and every volume. The rest (/proc and its read-only binds, /dev/pts, bwrap's device nodes) cannot
 * be: their files show as `nobody` inside, as in any unprivileged container.
 */
function idmappedPoints(opts: JailOptions): string[] {
  return ["/", "/usr", "/dev", AGENT_IN_SANDBOX, "/run/tollgate/sock", ...(opts.mounts ?? []).map((m) => m.path)];
}

/** A mount point as /proc/<pid>/mountinfo writes it (space, tab, newline and backslash octal-escaped). */
const unescapeMountPoint = (s: string) => s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));

/**
 * Re-roots the sandbox on id-mapped clones of its mounts (idmap.pl, run in its mount namespace as the host's root):
 * every mount it has, in mount order, each id-mapped through its user namespace if it is one of `mapped`. Throws if a
 * mount to map is missing or the kernel refuses; the caller then kills the sandbox.
 */
async function idmapMounts(initPid: number, userNsPid: number, mapped: string[]): Promise<void> {
  const norm = (p: string) => posix.normalize(p).replace(/(.)\/+$/, "$1");
  const want = new Set(mapped.map(norm));
  const points = (await readFile(`/proc/${initPid}/mountinfo`, "utf8"))
    .trim()
    .split("\n")
    .map((line) => norm(unescapeMountPoint(line.split(" ")[4] ?? "")));
  if (points[0] !== "/" || points.indexOf("/", 1) !== -1) throw new Error(`unexpected sandbox mounts: ${points.join(" ")}`);
  const args: string[] = [];
  for (const p of new Set(points.slice(1))) args.push(`${want.has(p) ? "+" : "="}${p.slice(1)}`);
  const missing = [...want].filter((p) => p !== "/" && !points.includes(p));
  if (missing.length) throw new Error(`mounts to id-map not found: ${missing.join(" ")}`);
  const userns = await open(`/proc/${userNsPid}/ns/user`, "r");
  try {
    const child = spawn(
      "/usr/bin/nsenter",
      ["-t", String(initPid), "-m", "-r", "-w", "--", PERL, "-e", IDMAP_SCRIPT, "apply", "3", "+.", ...args],
      {
        stdio: ["ignore", "ignore", "pipe", userns.fd],
        env: { PATH: "/usr/bin:/bin" },
        timeout: 10_000,
      },
    );
    let stderr = "";
    child.stderr!.on("data", (d) => (stderr += d));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once("error", reject);
      child.once("close", resolve);
    });
    if (code !== 0) throw new Error(`id-mapped mounts failed (${code}): ${stderr.trim()}`);
  } finally {
    await userns.close();
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
