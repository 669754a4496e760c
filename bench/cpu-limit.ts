// A CPU limit for one process, as a cgroup of its own: what a bench uses to stand a process on "a host of its own"
// with a fraction of a core, on a host it shares with its load generator.
//
// cgroup v1 (the `cpu` controller mounted at /sys/fs/cgroup/cpu): a child group with cpu.cfs_period_us and
// cpu.cfs_quota_us; cgroup v2 (/sys/fs/cgroup/unified, or /sys/fs/cgroup itself when it is the v2 root): cpu.max.
// The process is written into the group's cgroup.procs (every thread follows it). `release()` moves it back where it
// was (if it still runs) and removes the group; groups still present when the process exits are removed then too.
import { existsSync, rmdirSync, writeFileSync } from "node:fs";
import { access, constants, mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";

const V1 = "/sys/fs/cgroup/cpu";
const V2_ROOTS = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"];

/**
 * The CFS period (µs) unless the caller names one: short, so a limited process runs in slices of a millisecond or two rather than a burst per
 * 100 ms followed by a long stall; never so short that the quota falls under the kernel's 1 ms minimum.
 */
const PERIOD_US = 10_000;
const MIN_QUOTA_US = 1_000;
/**
 * The group's weight against the host's other work, ten times the default (v1 cpu.shares 1024, v2 cpu.weight 100):
 * on a busy host the process still gets its fraction when it wants it, as it would on a host of its own; the quota
 * keeps it from ever taking more.
 */
const SHARES_V1 = 10_240;
const WEIGHT_V2 = 1_000;

export interface CpuThrottling {
  /** CFS periods in which the group had work to run. */
  periods: number;
  /** Periods in which it ran out of quota and was made to wait. */
  throttled: number;
  /** Seconds it spent waiting for its next quota. */
  throttledSeconds: number;
}

export interface CpuLimit {
  /** The cgroup directory. */
  path: string;
  /** The fraction of one core the process may use. */
  fraction: number;
  /** The CFS period: the process gets fraction × this in every period, then waits for the next. */
  periodUs: number;
  /** The group's cpu.stat: how often the limit held the process back (counters since the group was made). */
  throttling(): Promise<CpuThrottling>;
  /** Moves the process back to the group it came from (if it still runs) and removes this one. Safe to call twice. */
  release(): Promise<void>;
}

type Layout = { version: 1; root: string } | { version: 2; root: string };

/** Where a CPU limit can be made on this host, or why it cannot. */
async function layout(): Promise<Layout | string> {
  if (existsSync(join(V1, "cpu.cfs_quota_us"))) {
    try {
      await access(V1, constants.W_OK);
      return { version: 1, root: V1 };
    } catch {
      return `${V1} is not writable (not root, or a read-only cgroup mount)`;
    }
  }
  for (const root of V2_ROOTS) {
    const controllers = join(root, "cgroup.controllers");
    if (!existsSync(controllers)) continue;
    if (!(await readFile(controllers, "utf8")).split(/\s+/).includes("cpu"))
      return `cgroup v2 at ${root} has no cpu controller (cgroup v1 holds it, or it is not delegated here)`;
    if (!(await readFile(join(root, "cgroup.subtree_control"), "utf8")).split(/\s+/).includes("cpu"))
      return `cgroup v2 at ${root} does not hand the cpu controller to its children (cgroup.subtree_control)`;
    try {
      await access(root, constants.W_OK);
      return { version: 2, root };
    } catch {
      return `${root} is not writable (not root, or a read-only cgroup mount)`;
    }
  }
  return "no cgroup cpu controller found (neither /sys/fs/cgroup/cpu nor a cgroup v2 mount)";
}

/** Why `limitCpu` would answer undefined on this host, or undefined when it can limit a process. */
export async function cpuLimitUnavailable(): Promise<string | undefined> {
  const l = await layout();
  return typeof l === "string" ? l : undefined;
}

/** The group `pid` sits in now under the `cpu` controller (v1) or the unified hierarchy (v2), relative to the root. */
async function currentGroup(pid: number, version: 1 | 2): Promise<string> {
  for (const line of (await readFile(`/proc/${pid}/cgroup`, "utf8")).split("\n")) {
    const [id, controllers, path] = line.split(":");
    if (version === 2 ? id === "0" : controllers!.split(",").includes("cpu")) return path ?? "/";
  }
  return "/";
}

/** Groups made by this process and not yet released: removed when it exits, however the bench ended. */
const live = new Map<string, { pid: number; back: string }>();
let sequence = 0;

/** Puts every limited process back and removes its group, synchronously (from an exit or a signal). */
function releaseAllNow(): void {
  for (const [path, { pid, back }] of live) {
    try {
      writeFileSync(join(back, "cgroup.procs"), String(pid));
    } catch {
      // Gone already: its group empties by itself.
    }
    try {
      rmdirSync(path);
      live.delete(path);
    } catch {
      // Still busy (a process not yet reaped): nothing more can be done from here.
    }
  }
}
process.once("exit", releaseAllNow);
// A signal ends the process without "exit": release, then die of the same signal as if nothing had been listening.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const)
  process.once(signal, () => {
    releaseAllNow();
    process.kill(process.pid, signal);
  });

/** Removes an emptied group, retrying briefly: the kernel takes a moment to see it empty once its process has left. */
async function removeGroup(path: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await rmdir(path);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "ENOENT") return;
      if (code !== "EBUSY" || attempt >= 50) throw err;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

/**
 * Limits process `pid` (and all its threads) to `fraction` of one core, in a cgroup of its own named
 * `tollgate-bench-<this pid>-<n>`, weighted so the host's other work does not keep it under that fraction. Answers undefined where cgroups cannot be written (see `cpuLimitUnavailable`).
 *
 * @example
 * const limit = await limitCpu(server.pid, 0.15);
 * try { await drive(); console.log(await limit?.throttling()); } finally { await limit?.release(); }
 */
export async function limitCpu(pid: number, fraction: number, opts: { periodUs?: number } = {}): Promise<CpuLimit | undefined> {
  if (!(fraction > 0)) throw new Error(`a CPU limit is a positive fraction of a core, not ${fraction}`);
  const l = await layout();
  if (typeof l === "string") return undefined;
  const period = Math.max(opts.periodUs ?? PERIOD_US, Math.ceil(MIN_QUOTA_US / fraction));
  const quota = Math.round(period * fraction);
  const path = join(l.root, `tollgate-bench-${process.pid}-${sequence++}`);
  const back = join(l.root, await currentGroup(pid, l.version));
  await mkdir(path);
  live.set(path, { pid, back });
  let released = false;
  const release = async () => {
    if (released) return;
    released = true;
    try {
      await writeFile(join(back, "cgroup.procs"), String(pid));
    } catch (err) {
      // ESRCH: the process has exited, and left the group with it.
      if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
    } finally {
      await removeGroup(path);
      live.delete(path);
    }
  };
  try {
    if (l.version === 1) {
      await writeFile(join(path, "cpu.cfs_period_us"), String(period));
      await writeFile(join(path, "cpu.cfs_quota_us"), String(quota));
      await writeFile(join(path, "cpu.shares"), String(SHARES_V1));
    } else {
      await writeFile(join(path, "cpu.max"), `${quota} ${period}`);
      await writeFile(join(path, "cpu.weight"), String(WEIGHT_V2));
    }
    await writeFile(join(path, "cgroup.procs"), String(pid));
  } catch (err) {
    await release().catch(() => {});
    throw err;
  }
  return {
    path,
    fraction: quota / period,
    periodUs: period,
    async throttling() {
      const stat = Object.fromEntries(
        (await readFile(join(path, "cpu.stat"), "utf8"))
          .trim()
          .split("\n")
          .map((line) => line.split(" ") as [string, string]),
      );
      return {
        periods: Number(stat.nr_periods ?? 0),
        throttled: Number(stat.nr_throttled ?? 0),
        // v1: throttled_time in ns; v2: throttled_usec.
        throttledSeconds: stat.throttled_usec !== undefined ? Number(stat.throttled_usec) / 1e6 : Number(stat.throttled_time ?? 0) / 1e9,
      };
    },
    release,
  };
}

/** CPU seconds (user + system) a process has used, from /proc/<pid>/stat (USER_HZ ticks, 100 a second on Linux). */
export async function processCpuSeconds(pid: number, clockTicks = 100): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces, so split after its closing parenthesis): state is field 3,
  // utime 14, stime 15.
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(rest[11]) + Number(rest[12])) / clockTicks;
}
