// A sandbox's size made real: memMiB and vcpus as cgroup limits (v2 where the host offers it, else v1, else none).
import { existsSync, readFileSync } from "node:fs";
import { mkdir, readFile, rmdir, writeFile } from "node:fs/promises";
import { cpus } from "node:os";
import { join } from "node:path";

export interface CgroupSupport {
  mode: "v2" | "v1" | "none";
  /** v2: the unified mount. v1: one mount per controller. */
  roots: { memory?: string; cpu?: string; cpuset?: string; unified?: string };
  reason?: string;
}

const PARENT = "tollgate-sandboxes";
const CPU_PERIOD_US = 100_000;

function mounts(): Array<{ dir: string; type: string; options: string[] }> {
  try {
    return readFileSync("/proc/mounts", "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => {
        const f = line.split(" ");
        return { dir: f[1]!, type: f[2]!, options: (f[3] ?? "").split(",") };
      });
  } catch {
    return [];
  }
}

/** What this host lets us limit: v2 with memory+cpu controllers, else writable v1 memory/cpu hierarchies. */
export function probeCgroups(): CgroupSupport {
  const all = mounts();
  const unified = all.find((m) => m.type === "cgroup2")?.dir;
  if (unified) {
    const controllers = (() => {
      try {
        return readFileSync(join(unified, "cgroup.controllers"), "utf8").trim().split(/\s+/);
      } catch {
        return [];
      }
    })();
    if (controllers.includes("memory") && controllers.includes("cpu")) {
      return { mode: "v2", roots: { unified, ...(controllers.includes("cpuset") ? { cpuset: unified } : {}) } };
    }
  }
  const v1 = (name: string) => all.find((m) => m.type === "cgroup" && m.options.includes(name))?.dir;
  const roots = { memory: v1("memory"), cpu: v1("cpu"), cpuset: v1("cpuset") };
  if (roots.memory && roots.cpu && !all.find((m) => m.dir === roots.memory)?.options.includes("ro")) {
    return { mode: "v1", roots, reason: unified ? "the cgroup v2 mount lacks the memory and cpu controllers" : "no cgroup v2 mount" };
  }
  return { mode: "none", roots: {}, reason: "neither cgroup v2 (memory+cpu) nor writable v1 memory/cpu hierarchies" };
}

function parseCpuList(list: string): number[] {
  const out: number[] = [];
  for (const part of list.trim().split(",").filter(Boolean)) {
    const [a, b] = part.split("-").map(Number);
    for (let i = a!; i <= (b ?? a!); i++) out.push(i);
  }
  return out;
}

let nextCpu = 0;

/** The cgroup(s) of one sandbox; every process entering the sandbox joins them before it execs. */
export class SandboxCgroup {
  private constructor(
    /** The `cgroup.procs` files a process writes its PID into. */
    readonly procFiles: string[],
    private readonly dirs: string[],
    /** What was applied, for logs and the README's claims. */
    readonly applied: { memoryBytes?: number; cpuQuotaUs?: number; cpus?: string },
  ) {}

  static none(): SandboxCgroup {
    return new SandboxCgroup([], [], {});
  }

  /** Creates and configures the groups; on any failure removes what it made and throws (the caller logs it). */
  static async create(id: string, limits: { memMiB: number; vcpus: number }, support: CgroupSupport): Promise<SandboxCgroup> {
    if (support.mode === "none") return SandboxCgroup.none();
    const made: string[] = [];
    try {
      return await SandboxCgroup.configure(id, limits, support, made);
    } catch (err) {
      await new SandboxCgroup([], made, {}).remove();
      throw err;
    }
  }

  private static async configure(
    id: string,
    limits: { memMiB: number; vcpus: number },
    support: CgroupSupport,
    made: string[],
  ): Promise<SandboxCgroup> {
    const memoryBytes = Math.max(64, Math.floor(limits.memMiB)) * 1024 * 1024;
    const host = cpus().length || 1;
    const vcpus = limits.vcpus > 0 ? limits.vcpus : host;
    const cpuQuotaUs = Math.round(Math.min(vcpus, host) * CPU_PERIOD_US);
    const applied: SandboxCgroup["applied"] = { memoryBytes, cpuQuotaUs };
    if (support.mode === "v2") {
      const root = support.roots.unified!;
      const parent = join(root, PARENT);
      await mkdir(parent, { recursive: true });
      await writeFile(join(root, "cgroup.subtree_control"), "+memory +cpu" + (support.roots.cpuset ? " +cpuset" : "")).catch(() => {});
      await writeFile(join(parent, "cgroup.subtree_control"), "+memory +cpu" + (support.roots.cpuset ? " +cpuset" : "")).catch(() => {});
      const dir = join(parent, id);
      await mkdir(dir, { recursive: true });
      made.push(dir);
      await writeFile(join(dir, "memory.max"), String(memoryBytes));
      await writeFile(join(dir, "memory.swap.max"), "0").catch(() => {});
      await writeFile(join(dir, "cpu.max"), `${cpuQuotaUs} ${CPU_PERIOD_US}`);
      if (support.roots.cpuset) {
        const cpus = await pickCpus(join(root, "cpuset.cpus.effective"), vcpus);
        if (cpus) await writeFile(join(dir, "cpuset.cpus"), cpus).catch(() => {}), (applied.cpus = cpus);
      }
      return new SandboxCgroup([join(dir, "cgroup.procs")], [dir], applied);
    }
    const dirs = made;
    const memory = join(support.roots.memory!, PARENT, id);
    await mkdir(memory, { recursive: true });
    dirs.push(memory);
    await writeFile(join(memory, "memory.limit_in_bytes"), String(memoryBytes));
    await writeFile(join(memory, "memory.memsw.limit_in_bytes"), String(memoryBytes)).catch(() => {});
    const cpu = join(support.roots.cpu!, PARENT, id);
    if (cpu !== memory) {
      await mkdir(cpu, { recursive: true });
      dirs.push(cpu);
    }
    await writeFile(join(cpu, "cpu.cfs_period_us"), String(CPU_PERIOD_US));
    await writeFile(join(cpu, "cpu.cfs_quota_us"), String(cpuQuotaUs));
    if (support.roots.cpuset && !dirs.includes(join(support.roots.cpuset, PARENT, id))) {
      // v1 cpuset: a new group starts with no CPUs and no memory nodes; both must be set, parent first.
      const base = support.roots.cpuset;
      const parent = join(base, PARENT);
      const set = join(parent, id);
      const cpus = await pickCpus(join(base, "cpuset.cpus"), vcpus);
      const mems = (await readFile(join(base, "cpuset.mems"), "utf8").catch(() => "")).trim();
      if (cpus && mems) {
        try {
          await mkdir(parent, { recursive: true });
          await writeFile(join(parent, "cpuset.cpus"), (await readFile(join(base, "cpuset.cpus"), "utf8")).trim());
          await writeFile(join(parent, "cpuset.mems"), mems);
          await mkdir(set, { recursive: true });
          dirs.push(set);
          await writeFile(join(set, "cpuset.cpus"), cpus);
          await writeFile(join(set, "cpuset.mems"), mems);
          applied.cpus = cpus;
        } catch {
          // cpuset is a refinement (the quota already caps CPU time): drop it rather than the sandbox.
          if (dirs.at(-1) === set) dirs.pop(), await rmdir(set).catch(() => {});
        }
      }
    }
    return new SandboxCgroup(
      dirs.map((d) => join(d, "cgroup.procs")),
      dirs,
      applied,
    );
  }

  /**
   * Wraps a host argv so the process joins this sandbox's cgroups before exec, so nothing it forks escapes them.
   * The wrapper is the host's /bin/sh; it runs before nsenter, outside the sandbox.
   */
  wrap(argv: string[]): string[] {
    if (!this.procFiles.length) return argv;
    return [
      "/bin/sh",
      "-c",
      'while [ "$1" != -- ]; do echo $$ > "$1"; shift; done; shift; exec "$@"',
      "tollgate-cgroup",
      ...this.procFiles,
      "--",
      ...argv,
    ];
  }

  /** Removes the groups once their processes are gone (a few tries: the kernel frees them asynchronously). */
  async remove(): Promise<void> {
    for (const dir of this.dirs) {
      for (let i = 0; i < 50 && existsSync(dir); i++) {
        if (
          await rmdir(dir).then(
            () => true,
            () => false,
          )
        )
          break;
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  }
}

/** `vcpus` CPUs out of the host's set, rotating the start so small sandboxes spread over the cores. */
async function pickCpus(file: string, vcpus: number): Promise<string | undefined> {
  const all = parseCpuList(await readFile(file, "utf8").catch(() => ""));
  if (!all.length) return undefined;
  const n = Math.min(all.length, Math.max(1, Math.ceil(vcpus)));
  if (n === all.length) return all.join(",");
  const start = nextCpu++ % all.length;
  return Array.from({ length: n }, (_, i) => all[(start + i) % all.length])
    .sort((a, b) => a! - b!)
    .join(",");
}
