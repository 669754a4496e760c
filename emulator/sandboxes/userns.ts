// A sandbox's user namespace: the host id range it maps onto, the namespace holder, and its id-mapped mounts (idmap.pl).
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { open, readFile, readlink, writeFile } from "node:fs/promises";
import { posix } from "node:path";
import type { SandboxCgroup } from "./cgroups.js";

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

export function takeSlot(): number {
  for (let slot = 0; slot < MAX_SLOTS; slot++)
    if (!usedSlots.has(slot)) {
      usedSlots.add(slot);
      return slot;
    }
  throw new Error(`no free host id range (${MAX_SLOTS} sandboxes running)`);
}

export const idMap = (slot: number | undefined) => `0 ${slot === undefined ? 0 : ID_BASE + slot * ID_COUNT} ${ID_COUNT}\n`;

/** Clones the sandbox's mounts id-mapped and re-roots it on them (or probes that the kernel can); see its header. */
const IDMAP_SCRIPT = readFileSync(new URL("./idmap.pl", import.meta.url), "utf8");
const PERL = "/usr/bin/perl";

export function freeSlot(slot: number): void {
  usedSlots.delete(slot);
}

/** Whether `/usr` and `dirs` can be id-mapped here: "" if so, else why not. idmap.pl speaks x86_64 system call numbers. */
export function probeIdmappedMounts(dirs: string[]): string {
  if (process.arch !== "x64") return `not on ${process.arch}`;
  const r = spawnSync(PERL, ["-e", IDMAP_SCRIPT, "probe", "/usr", ...dirs], { timeout: 5000 });
  return r.status === 0 ? "" : String(r.stderr || r.error).trim() || `exit ${r.status}`;
}

/**
 * Starts the sandbox's user-namespace holder inside its PID namespace (so it dies with the sandbox) and writes its
 * id map (`map`, for uids and gids alike). Returns its host PID; processes join the namespace through
 * /proc/<pid>/ns/user.
 */
export async function startUserNamespace(initPid: number, cgroup: SandboxCgroup, map: string): Promise<number> {
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

/** A mount point as /proc/<pid>/mountinfo writes it (space, tab, newline and backslash octal-escaped). */
const unescapeMountPoint = (s: string) => s.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(Number.parseInt(oct, 8)));

/**
 * Re-roots the sandbox on id-mapped clones of its mounts (idmap.pl, run in its mount namespace as the host's root):
 * every mount it has, in mount order, each id-mapped through its user namespace if it is one of `mapped`. Throws if a
 * mount to map is missing or the kernel refuses; the caller then kills the sandbox.
 */
export async function idmapMounts(initPid: number, userNsPid: number, mapped: string[]): Promise<void> {
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
