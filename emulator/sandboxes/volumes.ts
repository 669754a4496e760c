// Sandbox volumes: one host directory per volume, bound into sandboxes at the paths their `mounts` name.
import { randomBytes } from "node:crypto";
import { chown, chmod, lstat, mkdir, readdir, rm } from "node:fs/promises";
import { join, posix } from "node:path";
import { ApiError, badRequest, notFound } from "./errors.js";
import { SANDBOX_GID, SANDBOX_UID } from "./images.js";

export interface VolumeRecord {
  id: string;
  name: string;
  dir: string;
  createdAt: string;
}

/** A volume as a sandbox mounts it: the host directory, where it appears inside, and whether it is writable. */
export interface VolumeMount {
  volumeId: string;
  hostDir: string;
  path: string;
  readOnly: boolean;
  shared: boolean;
}

const VOLUME_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
/** Paths a volume may not cover: the sandbox's own system directories and the emulator's agent mount. */
const RESERVED = ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/proc", "/dev", "/etc", "/run/tollgate"];

async function treeSize(path: string): Promise<number> {
  const st = await lstat(path).catch(() => undefined);
  if (!st) return 0;
  if (!st.isDirectory()) return st.isFile() ? st.size : 0;
  let total = 0;
  for (const name of await readdir(path).catch(() => [] as string[])) total += await treeSize(join(path, name));
  return total;
}

export class VolumeStore {
  private readonly volumes: VolumeRecord[] = [];

  constructor(private readonly dir: string) {}

  async create(body: Record<string, unknown>): Promise<VolumeRecord> {
    const name = body.name;
    if (typeof name !== "string" || !VOLUME_NAME.test(name))
      throw badRequest("name must be 1-63 characters of letters, digits, '.', '_' or '-'");
    const id = `vol_${randomBytes(10).toString("hex")}`;
    const dir = join(this.dir, id);
    await mkdir(dir, { recursive: true });
    // The sandbox user owns the volume's root, so a default (non-root) process can write to it.
    await chown(dir, SANDBOX_UID, SANDBOX_GID);
    await chmod(dir, 0o755);
    const record = { id, name, dir, createdAt: new Date().toISOString() };
    this.volumes.push(record);
    return record;
  }

  get(id: string): VolumeRecord {
    const found = this.volumes.find((v) => v.id === id);
    if (!found) throw notFound(`Volume ${id}`);
    return found;
  }

  /** By id, else by name (case-insensitive); a name shared by several volumes is ambiguous (409). */
  resolve(key: string): VolumeRecord {
    const byId = this.volumes.find((v) => v.id === key);
    if (byId) return byId;
    const named = this.volumes.filter((v) => v.name.toLowerCase() === key.toLowerCase());
    if (named.length > 1) throw new ApiError(409, "ambiguous_volume_name", `${named.length} volumes are named ${key}; delete by id`);
    if (!named.length) throw notFound(`Volume ${key}`);
    return named[0];
  }

  list(search?: string): VolumeRecord[] {
    const needle = search?.toLowerCase();
    return this.volumes.filter((v) => !needle || v.name.toLowerCase().includes(needle) || v.id.includes(needle));
  }

  async remove(record: VolumeRecord): Promise<void> {
    this.volumes.splice(this.volumes.indexOf(record), 1);
    await rm(record.dir, { recursive: true, force: true });
  }

  async wire(v: VolumeRecord) {
    return { id: v.id, name: v.name, size: await treeSize(v.dir), transferAmount: 0, createdAt: v.createdAt };
  }

  /** Validates a create body's `mounts` ({"/path": {id, type?, shared?}}) into bind mounts; unknown volumes are 404. */
  mountsFor(raw: unknown): VolumeMount[] {
    if (raw === undefined || raw === null) return [];
    if (typeof raw !== "object" || Array.isArray(raw)) throw badRequest("mounts must be an object of path → {id, type?, shared?}");
    const mounts: VolumeMount[] = [];
    for (const [path, spec] of Object.entries(raw as Record<string, any>)) {
      const normal = posix.normalize(path).replace(/\/+$/, "");
      if (!path.startsWith("/") || normal === "" || normal !== path.replace(/\/+$/, ""))
        throw badRequest(`mount path ${path} must be an absolute, normalised path`);
      if (RESERVED.some((r) => normal === r || normal.startsWith(`${r}/`)))
        throw badRequest(`mount path ${path} is reserved`, "reserved_mount_path");
      if (!spec || typeof spec !== "object" || typeof spec.id !== "string") throw badRequest(`mounts["${path}"].id must be a volume id`);
      if (spec.type !== undefined && spec.type !== "rw" && spec.type !== "ro") throw badRequest(`mounts["${path}"].type must be rw or ro`);
      const volume = this.get(spec.id);
      mounts.push({ volumeId: volume.id, hostDir: volume.dir, path: normal, readOnly: spec.type === "ro", shared: spec.shared === true });
    }
    return mounts;
  }
}
