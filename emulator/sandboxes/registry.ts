// The sandbox service behind the control plane: create (from image or snapshot), read, list, stop, snapshot, ports.
import { randomBytes } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import type { Server } from "node:net";
import { join } from "node:path";
import type { EmulatorContext } from "../types.js";
import { ApiError, badRequest, notFound } from "./errors.js";
import type { ImageCatalog } from "./images.js";
import type { Isolation } from "./jail.js";
import { addressOf, mayReach, openOutbound } from "./outbound.js";
import { Sandbox, type SandboxSpec } from "./sandbox.js";
import { copyTree, type SnapshotStore } from "./snapshots.js";
import type { TokenIssuer } from "./tokens.js";

/** A region the SDKs accept (their SessionRegion / SandboxRegion), where a sandbox created without one runs. */
const DEFAULT_REGION = "us-central";
import type { VolumeStore } from "./volumes.js";
import { MAX_DISK_MIB, MIN_DISK_MIB, mountDisk } from "./sizes.js";

/** The port the runtime API itself listens on inside a real sandbox; never exposable. */
export const RUNTIME_PORT = 4001;
const DEFAULT_TIMEOUT_MINUTES = 60;

export class SandboxService {
  private readonly sandboxes = new Map<string, Sandbox>();
  /** Each sandbox's open ways out (./outbound.ts), by destination. */
  private readonly outbound = new WeakMap<Sandbox, Map<string, Server>>();

  constructor(
    private readonly ctx: EmulatorContext,
    private readonly images: ImageCatalog,
    readonly snapshots: SnapshotStore,
    readonly tokens: TokenIssuer,
    private readonly agentPath: string,
    private readonly isolation: Isolation,
    readonly volumes: VolumeStore,
  ) {
    // The team pays for vCPU and memory time once a sandbox's usage has landed.
    ctx.credits?.addSource((owns) => {
      let total = 0;
      for (const [id, sb] of this.sandboxes)
        if ((!owns || owns(id)) && ctx.credits!.landed(sb.endTime ?? undefined)) total += this.creditsUsed(sb);
      return total;
    });
  }

  /** Credits of the sandbox by the schedule: so far while running, final once stopped (0 until its usage has landed). */
  creditsUsed(sb: Sandbox): number {
    const meter = this.ctx.credits;
    const end = sb.endTime ?? undefined;
    if (!meter || (end !== undefined && !meter.landed(end))) return 0;
    return meter.sandbox(sb.createdAt.getTime(), end ?? Date.now(), sb.spec.vcpus, sb.spec.memMiB);
  }

  async create(body: Record<string, any>): Promise<Sandbox> {
    if (!this.isolation.available)
      throw new ApiError(503, "isolation_unavailable", `Sandboxes are unavailable on this machine: ${this.isolation.reason}`);
    let imageName: string;
    let imageId: string;
    let seed: string;
    let snapshotId: string | undefined;
    if (typeof body.snapshotName === "string" && body.snapshotName) {
      const snap = this.snapshots.resolve(body.snapshotName, body.snapshotId);
      ({ imageName, imageId } = snap);
      seed = snap.dir;
      snapshotId = snap.id;
    } else if (typeof body.imageName === "string" && body.imageName) {
      const image = this.images.find(body.imageName);
      if (!image || (typeof body.imageId === "string" && body.imageId && body.imageId !== image.id)) {
        throw new ApiError(404, "not_found", `Image ${body.imageName}${body.imageId ? ` (${body.imageId})` : ""} not found`);
      }
      ({ imageName, id: imageId } = image);
      seed = image.skeleton;
    } else {
      throw badRequest("imageName or snapshotName is required");
    }
    const timeoutMinutes =
      body.timeoutMinutes === undefined || body.timeoutMinutes === null ? DEFAULT_TIMEOUT_MINUTES : Number(body.timeoutMinutes);
    if (!Number.isFinite(timeoutMinutes) || timeoutMinutes < 0) throw badRequest("timeoutMinutes must be a non-negative number");
    const mounts = this.volumes.mountsFor(body.mounts);
    const ports = Array.isArray(body.exposedPorts)
      ? body.exposedPorts.map((p: any) => ({ port: validPort(p?.port), auth: Boolean(p?.auth) }))
      : [];
    const spec: SandboxSpec = {
      id: `sbx_${randomBytes(10).toString("hex")}`,
      imageName,
      imageId,
      snapshotId,
      timeoutMinutes,
      vcpus: numberOr(body.vcpus, 2),
      memMiB: numberOr(body.memMiB, 2048),
      diskSizeMiB: diskSize(body.diskSizeMiB),
      region: typeof body.region === "string" ? body.region : DEFAULT_REGION,
      network: {
        allowInternetAccess: body.allowInternetAccess !== false,
        allowOut: Array.isArray(body.allowOut) ? body.allowOut.map(String) : [],
        denyOut: Array.isArray(body.denyOut) ? body.denyOut.map(String) : [],
      },
      mounts,
    };
    const dir = join(this.ctx.stateDir, "sandboxes", spec.id);
    await mkdir(dir, { recursive: true });
    // `/` is a filesystem of diskSizeMiB where the host can make one (sizes.ts), else a directory of the host's disk.
    const releaseDisk = this.isolation.disks ? await mountDisk(dir, join(dir, "root"), spec.diskSizeMiB) : undefined;
    try {
      await copyTree(seed, join(dir, "root"));
    } catch (err) {
      await releaseDisk?.();
      if (/No space left/i.test(String((err as Error).message)))
        throw badRequest(`diskSizeMiB ${spec.diskSizeMiB} is too small for ${snapshotId ? "the snapshot" : "the image"}`, "disk_too_small");
      throw err;
    }
    const sb = await Sandbox.boot(spec, dir, this.agentPath, this.isolation, releaseDisk);
    for (const p of ports) sb.exposed.set(p.port, { auth: p.auth });
    // What stands for the internet (./outbound.ts): each listed destination reachable as its egress list allows.
    await this.syncOutbound(sb);
    this.sandboxes.set(sb.id, sb);
    this.ctx.log("sandbox.created", { id: sb.id, imageName, snapshotId });
    return sb;
  }

  /**
   * Opens each destination standing for the internet that the sandbox's egress list lets it reach, and closes each it no
   * longer does (at creation and after each network change): a refused destination has no listener inside, so a
   * connection to it is refused at once (ECONNREFUSED), as a network policy rejecting it would.
   */
  async syncOutbound(sb: Sandbox): Promise<void> {
    let open = this.outbound.get(sb);
    if (!open) this.outbound.set(sb, (open = new Map()));
    for (const target of this.ctx.internet?.list() ?? []) {
      const key = `${target.host}:${target.port}`;
      const allowed = mayReach(sb.spec.network, target.host, target.port);
      const server = open.get(key);
      if (!allowed && server) {
        open.delete(key);
        server.close();
        await (await sb.agent("user")).call("outbound-close", { host: addressOf(target.host), port: target.port }).catch(() => {});
      }
      if (!allowed || server || !sb.active) continue;
      const opened = await openOutbound({
        sockDir: sb.sockDir,
        target,
        allowed: () => sb.active && mayReach(sb.spec.network, target.host, target.port),
        listenInside: async (socket) =>
          void (await (await sb.agent("user")).call("outbound", { host: addressOf(target.host), port: target.port, socket })),
        log: this.ctx.log,
      }).catch((err) => {
        this.ctx.log("sandbox.egress.unavailable", { id: sb.id, error: String((err as Error).message) });
        return undefined;
      });
      if (!opened) continue;
      open.set(key, opened);
      sb.onStop(() => opened.close());
    }
  }

  get(id: string): Sandbox {
    const sb = this.sandboxes.get(id);
    if (!sb) throw notFound(`Sandbox ${id}`);
    return sb;
  }

  all(): Sandbox[] {
    return [...this.sandboxes.values()];
  }

  /** Active sandboxes that have this volume mounted. */
  mountingVolume(volumeId: string): Sandbox[] {
    return this.all().filter((sb) => sb.active && sb.spec.mounts.some((m) => m.volumeId === volumeId));
  }

  async stop(id: string): Promise<void> {
    await this.get(id).stop("stopped");
  }

  /**
   * The runtime origin sandboxes advertise. A loopback IP is swapped for `localhost`: exposed-port hosts are
   * `<port>-<id>.<runtime-host>`, and a WHATWG URL host ending in a number must be an IPv4 address, so the SDK's
   * getExposedUrl would throw on `3000-sbx_x.127.0.0.1`.
   */
  runtimeOrigin(): string {
    const u = new URL(this.ctx.runtimeOrigin());
    if (u.hostname === "127.0.0.1" || u.hostname === "[::1]") u.hostname = "localhost";
    return u.origin;
  }

  runtimeTarget(id: string) {
    const host = this.runtimeOrigin();
    return { transport: "regional_proxy" as const, host, baseUrl: `${host}/sandbox/${id}` };
  }

  /** `<scheme>://<port>-<id>.<runtime-host>:<port>/`, exactly what the SDK's getExposedUrl derives. */
  exposedUrl(id: string, port: number): string {
    const base = new URL(this.runtimeTarget(id).baseUrl);
    const authority = base.port ? `${port}-${id}.${base.hostname}:${base.port}` : `${port}-${id}.${base.hostname}`;
    return `${base.protocol}//${authority}/`;
  }

  async exposure(sb: Sandbox, port: number) {
    const entry = sb.exposed.get(port);
    if (!entry) return undefined;
    const url = this.exposedUrl(sb.id, port);
    if (!entry.auth) return { port, auth: false, url, browserUrl: url };
    const grant = await this.tokens.sign("port-grant", sb.id, Math.max(this.ctx.runtimeTokenTtlSeconds, 60), { port });
    return {
      port,
      auth: true,
      url,
      browserUrl: `${url}_hb/auth?grant=${encodeURIComponent(grant.token)}&next=%2F`,
      browserUrlExpiresAt: new Date(grant.expiresAt).toISOString(),
    };
  }

  async expose(sb: Sandbox, body: Record<string, unknown>) {
    sb.assertActive();
    const port = validPort(body.port);
    sb.exposed.set(port, { auth: Boolean(body.auth) });
    sb.updatedAt = new Date();
    return (await this.exposure(sb, port))!;
  }

  unexpose(sb: Sandbox, body: Record<string, unknown>) {
    const port = validPort(body.port);
    sb.exposed.delete(port);
    sb.updatedAt = new Date();
    return { port, exposed: false };
  }

  /** The control-plane view of a sandbox; a running one carries a freshly minted runtime token every time. */
  async detail(sb: Sandbox, withToken: boolean) {
    // The state is read before the awaits below: a sandbox that stops meanwhile is shown as it was, never "closed" with
    // a token.
    const { status, closeReason, endTime, active } = sb;
    const updatedAt = sb.updatedAt.toISOString();
    const token = withToken && active ? await this.tokens.sign("runtime", sb.id, this.ctx.runtimeTokenTtlSeconds) : undefined;
    const exposedPorts = [];
    for (const port of [...sb.exposed.keys()].sort((a, b) => a - b)) exposedPorts.push(await this.exposure(sb, port));
    const start = sb.createdAt.getTime();
    const summary = {
      id: sb.id,
      teamId: "team_emulator",
      status,
      endTime,
      startTime: start,
      createdAt: sb.createdAt.toISOString(),
      updatedAt,
      closeReason,
      dataConsumed: 0,
      proxyDataConsumed: 0,
      usageType: "sandbox",
      jobId: null,
      launchState: null,
      creditsUsed: this.creditsUsed(sb),
      region: sb.spec.region,
      sessionUrl: `${this.ctx.controlOrigin()}/sandboxes/${sb.id}`,
      duration: (endTime ?? Date.now()) - start,
      proxyBytesUsed: 0,
      vcpus: sb.spec.vcpus,
      memMiB: sb.spec.memMiB,
      diskSizeMiB: sb.spec.diskSizeMiB,
      timeoutMinutes: sb.spec.timeoutMinutes,
      network: { ...sb.spec.network },
      runtime: this.runtimeTarget(sb.id),
      exposedPorts,
      imageName: sb.spec.imageName,
    };
    if (!withToken) return summary;
    return { ...summary, token: token?.token ?? null, tokenExpiresAt: token ? new Date(token.expiresAt).toISOString() : null };
  }

  async close(): Promise<void> {
    await Promise.all(this.all().map((sb) => sb.stop("emulator_shutdown").catch(() => {})));
    await Promise.all(this.all().map((sb) => rm(sb.dir, { recursive: true, force: true }).catch(() => {})));
  }
}

function diskSize(v: unknown): number {
  if (v === undefined || v === null) return 8192;
  if (typeof v !== "number" || !Number.isInteger(v) || v < MIN_DISK_MIB || v > MAX_DISK_MIB)
    throw badRequest(`diskSizeMiB must be an integer from ${MIN_DISK_MIB} to ${MAX_DISK_MIB}`, "invalid_argument");
  return v;
}

function numberOr(v: unknown, fallback: number): number {
  return typeof v === "number" && Number.isFinite(v) ? v : fallback;
}

export function validPort(v: unknown): number {
  const port = typeof v === "string" ? Number(v) : v;
  if (typeof port !== "number" || !Number.isInteger(port) || port < 1 || port > 65535)
    throw badRequest("port must be an integer between 1 and 65535");
  if (port === RUNTIME_PORT)
    throw badRequest(`Port ${RUNTIME_PORT} is reserved for the sandbox runtime and cannot be exposed`, "reserved_port");
  return port;
}
