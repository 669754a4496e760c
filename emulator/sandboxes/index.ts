// The sandbox half of the emulator: real bubblewrap sandboxes behind the upstream's control and runtime planes.
import { chmod, mkdir } from "node:fs/promises";
import { Hono } from "hono";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { EmulatorContext, EmulatorModule } from "../types.js";
import { sandboxControlRoutes } from "./control.js";
import { ImageBuildStore } from "./image-builds.js";
import { imageRoutes, imageStorageRoutes } from "./image-routes.js";
import { ImageCatalog } from "./images.js";
import { probeCgroups } from "./cgroups.js";
import { probeIsolation } from "./jail.js";
import { PortRouter } from "./ports.js";
import { SandboxService } from "./registry.js";
import { sandboxRuntimeRoutes } from "./runtime.js";
import { SnapshotStore } from "./snapshots.js";
import { probeDisks, startLxcfs } from "./sizes.js";
import { TokenIssuer } from "./tokens.js";
import { runtimeUpgrades } from "./upgrades.js";
import { volumeRoutes } from "./volume-routes.js";
import { VolumeStore } from "./volumes.js";

export { RUNTIME_PORT } from "./registry.js";

/**
 * Builds the sandbox module: `/api/sandbox*`, `/api/images*` (with builds and their upload URL), `/api/snapshots*`
 * and `/api/volume*` on the control listener, and
 * `/sandbox/<id>/...` plus `<port>-<id>.<runtime-host>` on the runtime listener.
 *
 * @example
 * const emu = await startEmulator({ modules: ["sandboxes"] });
 * const hb = new Hyperbrowser({ apiKey: emu.apiKey, baseUrl: emu.controlUrl });
 * const sbx = await hb.sandboxes.create({ imageName: "node" });
 */
export async function createSandboxModule(ctx: EmulatorContext): Promise<EmulatorModule> {
  // Root-only: with the identity map (no id-mapped mounts) a sandbox's root owns its files as host uid 0 (see
  // jail.ts), setuid bits included.
  await mkdir(join(ctx.stateDir, "sandboxes"), { recursive: true, mode: 0o700 });
  await chmod(join(ctx.stateDir, "sandboxes"), 0o700);
  const agentPath = fileURLToPath(new URL("./agent.mjs", import.meta.url));
  const isolation = probeIsolation(probeCgroups(), [ctx.stateDir, join(ctx.stateDir, "sandboxes"), dirname(agentPath)]);
  if (isolation.available) {
    const { mode, reason } = isolation.cgroups;
    ctx.log("sandbox.sizes", {
      cgroups: mode,
      ...(reason ? { reason } : {}),
      effect: mode === "none" ? "memMiB and vcpus are echoed, not enforced" : "memMiB and vcpus are enforced",
    });
  }
  if (!isolation.available)
    ctx.log("sandbox.isolation.unavailable", { level: "warn", reason: isolation.reason, effect: "POST /api/sandbox answers 503" });
  else if (!isolation.privateNetwork)
    ctx.log("sandbox.isolation.degraded", {
      level: "warn",
      reason: isolation.reason,
      effect: "sandboxes share the host loopback; two cannot listen on one port",
    });
  else if (!isolation.userNamespace)
    ctx.log("sandbox.isolation.degraded", {
      level: "warn",
      reason: isolation.reason,
      effect: "runAs root has no capability (cannot write the user's files) and sudo fails",
    });
  else if (!isolation.idmappedMounts)
    ctx.log("sandbox.isolation.degraded", {
      level: "warn",
      reason: isolation.reason,
      effect: "sandbox ids map to the same host ids: root inside is host uid 0 for file ownership",
    });
  if (!isolation.available || !isolation.privateNetwork || !isolation.userNamespace || !isolation.idmappedMounts)
    console.warn(`[tollgate emulator] sandbox isolation degraded: ${isolation.reason}`);
  // What sandboxes see of their sizes: /proc/meminfo & co. from LXCFS, `/` a filesystem of diskSizeMiB.
  const lxcfs = isolation.available ? await startLxcfs(ctx.stateDir) : undefined;
  if (typeof lxcfs === "object") isolation.lxcfs = lxcfs.dir;
  const noDisks = isolation.available ? probeDisks() : "isolation unavailable";
  isolation.disks = noDisks === undefined;
  if (isolation.available)
    ctx.log("sandbox.sizes.visible", {
      ...(typeof lxcfs === "string" ? { level: "warn", lxcfs: lxcfs } : { lxcfs: "on" }),
      disks: noDisks ?? "ext4 of diskSizeMiB per sandbox",
      ...(typeof lxcfs === "string" ? { effect: "/proc/meminfo and free show the host's memory" } : {}),
      ...(noDisks ? { diskEffect: "df / shows the host's disk; diskSizeMiB is not enforced" } : {}),
    });
  const images = await ImageCatalog.create(ctx.stateDir);
  const tokens = new TokenIssuer(ctx.tokenSecret);
  const snapshots = new SnapshotStore(join(ctx.stateDir, "snapshots"));
  const volumes = new VolumeStore(join(ctx.stateDir, "volumes"));
  const builds = new ImageBuildStore(join(ctx.stateDir, "image-builds"), images);
  const service = new SandboxService(ctx, images, snapshots, tokens, agentPath, isolation, volumes);
  const ports = new PortRouter(service, tokens);
  const upgrades = runtimeUpgrades(service, tokens, ports);
  return {
    name: "sandboxes",
    control: new Hono()
      .route("/", sandboxControlRoutes(ctx, service, images))
      .route("/", imageRoutes(ctx, images, builds, tokens))
      .route("/", volumeRoutes(ctx, service)),
    runtime: sandboxRuntimeRoutes(ctx, service, tokens, ports),
    storage: imageStorageRoutes(ctx, builds, tokens),
    upgradeRuntime: upgrades.handle,
    /** Test hook: the host PIDs still alive in a sandbox's PID namespace (and its bwrap), to prove stop leaves none. */
    async hostPids(id: string): Promise<number[]> {
      const sb = service.get(id);
      const pids = await sb.jail.remainingPids();
      return sb.jail.running && sb.jail.bwrap.pid ? [sb.jail.bwrap.pid, ...pids] : pids;
    },
    /** Test hook: the host directory holding a sandbox's root (its files with their ids on disk). */
    hostRootDir(id: string): string {
      return service.get(id).rootDir;
    },
    async close() {
      upgrades.close();
      await service.close();
      if (typeof lxcfs === "object") await lxcfs.close();
    },
  } as EmulatorModule & { hostPids(id: string): Promise<number[]>; hostRootDir(id: string): string };
}
