// Browser profiles: a saved Chromium user-data directory per profile, that sessions start from and may write back.
import { randomUUID } from "node:crypto";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { copyUserData } from "./browser-state.js";
import { SessionError } from "./session-error.js";
import { TEAM_ID } from "../team.js";

export interface Profile {
  id: string;
  name: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** Host directory holding the profile's user data. */
  dir: string;
}

export class ProfileStore {
  private readonly profiles = new Map<string, Profile>();

  constructor(private readonly root: string) {}

  async create(name: unknown): Promise<Profile> {
    if (name !== undefined && name !== null && typeof name !== "string")
      throw new SessionError(400, "invalid_params", "name must be a string");
    const id = randomUUID();
    const now = new Date();
    const profile: Profile = { id, name: typeof name === "string" ? name : null, createdAt: now, updatedAt: now, dir: join(this.root, id) };
    await mkdir(profile.dir, { recursive: true });
    this.profiles.set(id, profile);
    return profile;
  }

  get(id: string): Profile {
    const profile = this.profiles.get(id);
    if (!profile) throw new SessionError(404, "not_found", `Profile ${id} not found`);
    return profile;
  }

  /** A new profile starting from a copy of `id`'s user data; later changes to either stay apart. */
  async fork(id: string, name: unknown): Promise<Profile> {
    const source = this.get(id);
    const fork = await this.create(name ?? (source.name ? `${source.name} (fork)` : undefined));
    await copyUserData(source.dir, fork.dir);
    return fork;
  }

  async remove(id: string): Promise<void> {
    const profile = this.get(id);
    this.profiles.delete(id);
    await rm(profile.dir, { recursive: true, force: true });
  }

  /** Profiles newest first, optionally those whose name contains `name` (case-insensitive). */
  list(name?: string): Profile[] {
    const needle = name?.toLowerCase();
    return [...this.profiles.values()]
      .filter((p) => !needle || (p.name ?? "").toLowerCase().includes(needle))
      .sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime());
  }

  /** Replaces the profile's user data with a session's (persistChanges); a profile deleted meanwhile stays deleted. */
  async saveFrom(id: string, userDataDir: string): Promise<void> {
    const profile = this.profiles.get(id);
    if (!profile) return;
    await copyUserData(userDataDir, profile.dir);
    profile.updatedAt = new Date();
  }

  wire(p: Profile) {
    return { id: p.id, name: p.name, teamId: TEAM_ID, createdAt: p.createdAt.toISOString(), updatedAt: p.updatedAt.toISOString() };
  }
}
