// Memory snapshots: a sandbox's writable root copied aside under a name, from which new sandboxes can start.
import { execFile } from "node:child_process";
import { mkdir, rm } from "node:fs/promises";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { promisify } from "node:util";
import { ApiError, notFound } from "./errors.js";

const run = promisify(execFile);

export interface Snapshot {
  id: string;
  snapshotName: string;
  namespace: string;
  imageNamespace: string;
  imageName: string;
  imageId: string;
  status: "creating" | "created" | "failed";
  vcpus: number | null;
  memMiB: number | null;
  diskSizeMiB: number | null;
  compatibilityTag: string;
  metadata: Record<string, unknown>;
  uploaded: boolean;
  createdAt: string;
  updatedAt: string;
  dir: string;
}

/** Copies a directory tree preserving owners, modes, links and timestamps (reflinks where the fs has them). */
export async function copyTree(from: string, to: string): Promise<void> {
  await mkdir(to, { recursive: true });
  await run("/usr/bin/cp", ["-a", "--reflink=auto", `${from}/.`, to]);
}

export class SnapshotStore {
  private readonly snapshots: Snapshot[] = [];

  constructor(private readonly dir: string) {}

  async capture(
    rootDir: string,
    meta: {
      snapshotName?: unknown;
      imageName: string;
      imageId: string;
      vcpus: number;
      memMiB: number;
      diskSizeMiB: number;
      sandboxId: string;
    },
  ) {
    const id = `snap_${randomBytes(9).toString("base64url")}`;
    const name =
      typeof meta.snapshotName === "string" && meta.snapshotName.trim() ? meta.snapshotName.trim() : `${meta.sandboxId}-${Date.now()}`;
    const now = new Date().toISOString();
    const snap: Snapshot = {
      id,
      snapshotName: name,
      namespace: "team",
      imageNamespace: "public",
      imageName: meta.imageName,
      imageId: meta.imageId,
      status: "creating",
      vcpus: meta.vcpus,
      memMiB: meta.memMiB,
      diskSizeMiB: meta.diskSizeMiB,
      compatibilityTag: "tollgate-emulator-fs-v1",
      metadata: { sourceSandboxId: meta.sandboxId, preserves: "filesystem" },
      uploaded: true,
      createdAt: now,
      updatedAt: now,
      dir: join(this.dir, id),
    };
    this.snapshots.push(snap);
    try {
      // Skip the agent's mount points; everything else the sandbox wrote comes along.
      await copyTree(rootDir, snap.dir);
      await run("/usr/bin/rm", ["-rf", join(snap.dir, "run/tollgate")]);
      snap.status = "created";
    } catch (err) {
      snap.status = "failed";
      snap.metadata.error = String((err as Error).message);
    }
    snap.updatedAt = new Date().toISOString();
    return snap;
  }

  /** The newest created snapshot with this name or id; a pinned `snapshotId` must match it. */
  resolve(idOrName: string, pinnedId?: unknown): Snapshot {
    const found = [...this.snapshots].reverse().find((s) => (s.snapshotName === idOrName || s.id === idOrName) && s.status === "created");
    if (!found || (typeof pinnedId === "string" && pinnedId && pinnedId !== found.id)) {
      throw new ApiError(404, "not_found", `Snapshot ${idOrName}${pinnedId ? ` (${String(pinnedId)})` : ""} not found`);
    }
    return found;
  }

  get(idOrName: string): Snapshot {
    const found = [...this.snapshots].reverse().find((s) => s.snapshotName === idOrName || s.id === idOrName);
    if (!found) throw notFound(`Snapshot ${idOrName}`);
    return found;
  }

  /** Forgets a snapshot and frees its files; sandboxes started from it keep their own copies. */
  async remove(idOrName: string): Promise<void> {
    const snap = this.get(idOrName);
    this.snapshots.splice(this.snapshots.indexOf(snap), 1);
    await rm(snap.dir, { recursive: true, force: true });
  }

  list(q: { status?: string[]; imageName?: string; search?: string }): Snapshot[] {
    return this.snapshots.filter(
      (s) =>
        (!q.status?.length || q.status.includes(s.status)) &&
        (!q.imageName || s.imageName === q.imageName) &&
        (!q.search || s.snapshotName.includes(q.search) || s.id.includes(q.search)),
    );
  }

  wire(s: Snapshot) {
    const { dir: _d, ...rest } = s;
    return rest;
  }
}
