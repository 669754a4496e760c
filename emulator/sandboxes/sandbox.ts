// One sandbox: its jail, agents, process/terminal/watch tables, exposed ports, and its life from start to stop.
import { execFile } from "node:child_process";
import { mkdir, chown, chmod, lstat, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { SandboxAgent } from "./agent-client.js";
import { SandboxCgroup } from "./cgroups.js";
import { ApiError } from "./errors.js";
import { SANDBOX_GID, SANDBOX_UID } from "./images.js";
import { Jail, hostnameOf, type Isolation, type SandboxUser } from "./jail.js";
import { ProcessTable } from "./processes.js";
import { TerminalTable } from "./terminals.js";
import type { VolumeMount } from "./volumes.js";
import { WatchTable } from "./watches.js";

const run = promisify(execFile);

/** `root/rel` as real directories, replacing any symlink or file on the way (the host must not follow them). */
async function realDir(root: string, rel: string): Promise<string> {
  let at = root;
  for (const part of rel.split("/").filter(Boolean)) {
    at = join(at, part);
    const st = await lstat(at).catch(() => null);
    if (st?.isDirectory()) continue;
    if (st) await rm(at, { force: true });
    await mkdir(at, { mode: 0o755 });
  }
  return at;
}

export type SandboxStatus = "active" | "closed" | "error";

export interface SandboxSpec {
  id: string;
  imageName: string;
  imageId: string;
  snapshotId?: string;
  timeoutMinutes: number;
  vcpus: number;
  memMiB: number;
  diskSizeMiB: number;
  region: string;
  network: { allowInternetAccess: boolean; allowOut: string[]; denyOut: string[] };
  mounts: VolumeMount[];
}

/**
 * Creates a volume's mount point inside the sandbox root, component by component, refusing symlinks: the root may
 * come from a snapshot, and a link there must not steer the host-side mkdir out of it.
 */
async function ensureMountPoint(rootDir: string, path: string): Promise<void> {
  let at = rootDir;
  for (const part of path.split("/").filter(Boolean)) {
    at = join(at, part);
    const st = await lstat(at).catch(() => undefined);
    if (st?.isSymbolicLink()) throw new ApiError(400, "invalid_mount_path", `mount path ${path} crosses a symbolic link in the image`);
    if (st && !st.isDirectory()) throw new ApiError(400, "invalid_mount_path", `mount path ${path} is a file in the image`);
    if (!st) {
      await mkdir(at);
      await chmod(at, 0o755);
    }
  }
}

export class Sandbox {
  status: SandboxStatus = "active";
  closeReason: string | null = null;
  readonly createdAt = new Date();
  updatedAt = new Date();
  endTime: number | null = null;
  readonly exposed = new Map<number, { auth: boolean }>();
  readonly processes: ProcessTable;
  readonly terminals: TerminalTable;
  readonly watches = new WatchTable();
  private readonly agents = new Map<SandboxUser, Promise<SandboxAgent>>();
  private timer?: NodeJS.Timeout;
  private stopping?: Promise<void>;
  private readonly stopHooks: Array<() => void> = [];

  private constructor(
    readonly spec: SandboxSpec,
    readonly dir: string,
    readonly jail: Jail,
    /** Unmounts and deletes the sandbox's disk (sizes.ts), once stopped. */
    private readonly releaseDisk?: () => Promise<void>,
  ) {
    this.processes = new ProcessTable(jail);
    this.terminals = new TerminalTable(jail);
  }

  get id(): string {
    return this.spec.id;
  }
  get rootDir(): string {
    return join(this.dir, "root");
  }
  get sockDir(): string {
    return join(this.dir, "sock");
  }

  /** Boots the jail on an already populated root dir and starts the user's agent, so files work at once. */
  static async boot(
    spec: SandboxSpec,
    dir: string,
    agentPath: string,
    isolation: Isolation,
    releaseDisk?: () => Promise<void>,
  ): Promise<Sandbox> {
    const sockDir = join(dir, "sock");
    // One private directory per agent: neither user can remove or replace the other's socket.
    await mkdir(sockDir, { recursive: true });
    await chmod(sockDir, 0o755);
    for (const [user, uid, gid] of [
      ["user", SANDBOX_UID, SANDBOX_GID],
      ["root", 0, 0],
    ] as const) {
      await mkdir(join(sockDir, user), { recursive: true });
      await chown(join(sockDir, user), uid, gid);
      await chmod(join(sockDir, user), 0o700);
    }
    // bwrap would create missing mount points 0700, which the sandbox user could not traverse. The root dir may come
    // from a snapshot the sandbox's root shaped: never follow its symlinks on the host.
    const mountDir = await realDir(join(dir, "root"), "run/tollgate/sock").then(() => join(dir, "root", "run", "tollgate"));
    await chmod(mountDir, 0o755);
    await rm(join(mountDir, "agent.mjs"), { recursive: true, force: true });
    await writeFile(join(mountDir, "agent.mjs"), "", { flag: "wx" });
    for (const m of spec.mounts) await ensureMountPoint(join(dir, "root"), m.path);
    const cgroup = await SandboxCgroup.create(spec.id, spec, isolation.cgroups).catch((err) => {
      console.warn(`[tollgate emulator] sandbox ${spec.id}: sizes not enforced: ${(err as Error).message}`);
      return SandboxCgroup.none();
    });
    let jail: Jail;
    try {
      jail = await Jail.start({ id: spec.id, rootDir: join(dir, "root"), sockDir, agentPath, isolation, cgroup, mounts: spec.mounts });
    } catch (err) {
      await cgroup.remove();
      await releaseDisk?.();
      throw err;
    }
    const sb = new Sandbox(spec, dir, jail, releaseDisk);
    jail.onExit = () => void sb.stop(sb.stopping ? (sb.closeReason ?? "stopped") : "crashed");
    try {
      // sudo looks its host name up, as a real machine resolves its own. Written from inside, as the sandbox's root.
      const hosts = `127.0.0.1\tlocalhost\n127.0.1.1\t${hostnameOf(spec.id)}\n::1\tlocalhost ip6-localhost ip6-loopback\n`;
      const argv = [...jail.enterArgv("root", "/"), "/bin/sh", "-c", 'printf "%s" "$1" > /etc/hosts', "sh", hosts];
      await run(argv[0]!, argv.slice(1), { env: { PATH: "/usr/bin:/bin" }, timeout: 10_000 }).catch(() => {});
      await sb.agent("user");
    } catch (err) {
      await sb.stop("error");
      throw err;
    }
    if (spec.timeoutMinutes > 0) {
      sb.timer = setTimeout(() => void sb.stop("timeout"), spec.timeoutMinutes * 60_000);
      sb.timer.unref();
    }
    return sb;
  }

  get active(): boolean {
    return this.status === "active";
  }

  assertActive(): void {
    if (!this.active) throw new ApiError(409, "sandbox_not_running", "Sandbox is not running");
  }

  /** The agent serving file operations as `user`, started on first use (and again if it died). */
  agent(user: SandboxUser): Promise<SandboxAgent> {
    this.assertActive();
    const existing = this.agents.get(user);
    if (existing) {
      return existing.then((a) => {
        if (a.alive) return a;
        this.agents.delete(user);
        return this.agent(user);
      });
    }
    const started = SandboxAgent.start(this.jail, user, this.sockDir);
    started.catch(() => this.agents.delete(user));
    this.agents.set(user, started);
    return started;
  }

  /** Runs `fn` when the sandbox stops (its way out closed: ./outbound.ts). */
  onStop(fn: () => void): void {
    this.stopHooks.push(fn);
  }

  /** Stops everything inside; resolves once no process of the sandbox is left. Idempotent. */
  stop(reason: string): Promise<void> {
    if (this.stopping) return this.stopping;
    this.status = "closed";
    this.closeReason = reason;
    this.endTime = Date.now();
    this.updatedAt = new Date();
    clearTimeout(this.timer);
    this.stopping = (async () => {
      for (const fn of this.stopHooks.splice(0)) fn();
      this.watches.stopAll();
      // Killing the namespace first lets each nsenter parent reap its child; killing both at once leaves zombies
      // for the host's init to collect.
      await this.jail.stop();
      for (const a of this.agents.values())
        await a.then(
          (x) => x.stop(),
          () => {},
        );
      await this.releaseDisk?.();
    })();
    return this.stopping;
  }
}
