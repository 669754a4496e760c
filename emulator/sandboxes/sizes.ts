// A sandbox's sizes as its processes see them: /proc/meminfo (and `free`, `uptime`, /proc/cpuinfo, /proc/stat) from
// LXCFS, which answers each reader from its own cgroup, and `/` as an ext4 filesystem of exactly diskSizeMiB on a
// sparse loop image of its own (so writes past it fail with ENOSPC, and `df /` shows the size).
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { guardGroup, guardMount, releaseGroup, releaseMount } from "../reaper.js";

const run = promisify(execFile);
const LXCFS = "/usr/bin/lxcfs";
const MKFS = "/usr/sbin/mkfs.ext4";
const MOUNT = "/usr/bin/mount";
const UMOUNT = "/usr/bin/umount";

/** The /proc files LXCFS serves that a sandbox sees in place of the host's (bound over /proc/<name>). */
export const LXCFS_PROC_FILES = ["meminfo", "cpuinfo", "stat", "swaps", "uptime"];

export interface Lxcfs {
  /** Its mount point: `<dir>/proc/meminfo`... */
  dir: string;
  close(): Promise<void>;
}

const mounted = async (dir: string) =>
  (await readFile("/proc/mounts", "utf8").catch(() => "")).split("\n").some((l) => l.split(" ")[1] === dir);

/**
 * Starts one LXCFS for this emulator (a FUSE daemon; it answers every sandbox, each from its own cgroups). Returns the
 * reason instead when it cannot run here (no binary, no /dev/fuse, no cgroups): sandboxes then see the host's files.
 */
export async function startLxcfs(stateDir: string): Promise<Lxcfs | string> {
  if (!existsSync(LXCFS)) return "lxcfs is not installed (apt-get install lxcfs)";
  if (!existsSync("/dev/fuse")) return "no /dev/fuse";
  const dir = join(stateDir, "lxcfs");
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const child: ChildProcess = spawn(LXCFS, ["-f", "-p", join(stateDir, "lxcfs.pid"), dir], {
    detached: true,
    stdio: ["ignore", "ignore", "pipe"],
  });
  const pid = child.pid;
  guardGroup(pid);
  guardMount(dir);
  let stderr = "";
  child.stderr!.setEncoding("utf8").on("data", (d: string) => (stderr = (stderr + d).slice(-2000)));
  child.on("error", () => {});
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      // SIGTERM: LXCFS unmounts itself on the way out; SIGKILL after a while.
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 3000);
      await exited;
      clearTimeout(timer);
    }
    if (await mounted(dir)) await run(UMOUNT, ["-l", dir]).catch(() => {});
    releaseGroup(pid);
    releaseMount(dir);
  };
  const deadline = Date.now() + 10_000;
  while (!(await stat(join(dir, "proc", "meminfo")).catch(() => null))) {
    if (Date.now() > deadline || child.exitCode !== null) {
      await stop();
      return `lxcfs did not start: ${stderr.trim().split("\n").slice(-2).join(" | ") || "timed out"}`;
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  return { dir, close: stop };
}

/** Whether this host can give sandboxes a disk of their own (ext4 on a loop device), else the reason. */
export function probeDisks(): string | undefined {
  if (!existsSync(MKFS)) return "mkfs.ext4 is not installed (apt-get install e2fsprogs)";
  if (!existsSync("/dev/loop-control")) return "no loop devices (/dev/loop-control)";
  return undefined;
}

/** Smallest disk: ext4's metadata plus the image skeleton must fit. */
export const MIN_DISK_MIB = 64;
export const MAX_DISK_MIB = 1024 * 1024;

/**
 * Makes `rootDir` the mount point of a fresh ext4 filesystem of `sizeMiB` on a sparse image `<dir>/disk.img` (only
 * what is written takes host disk). `minixdf` makes statfs count the whole device, so `df -m /` shows sizeMiB;
 * `noinit_itable` spares the host the background zeroing of inode tables. Returns the release (unmount, delete).
 */
export async function mountDisk(dir: string, rootDir: string, sizeMiB: number): Promise<() => Promise<void>> {
  const image = join(dir, "disk.img");
  await mkdir(rootDir, { recursive: true });
  await run("/usr/bin/truncate", ["-s", `${sizeMiB}M`, image]);
  await run(MKFS, ["-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0", image], { timeout: 30_000 });
  guardMount(rootDir);
  try {
    await run(MOUNT, ["-t", "ext4", "-o", "loop,minixdf,noinit_itable", image, rootDir], { timeout: 30_000 });
  } catch (err) {
    releaseMount(rootDir);
    await rm(image, { force: true });
    throw err;
  }
  let released = false;
  return async () => {
    if (released) return;
    released = true;
    // The loop device goes with the last reference to the mount (mount -o loop sets autoclear).
    await run(UMOUNT, [rootDir]).catch(() => run(UMOUNT, ["-l", rootDir]).catch(() => {}));
    releaseMount(rootDir);
    await rm(image, { force: true });
  };
}
