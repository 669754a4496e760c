// Uploaded browser extensions: each zip unpacked into its own directory, listed for the team, and loaded into the
// browsers of sessions that name them.
import { randomUUID } from "node:crypto";
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { SessionError } from "./session-error.js";
import { unpackZip } from "./zip-reader.js";

export interface Extension {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  zipPath: string;
  /** The unpacked extension: the directory holding its manifest.json, as `--load-extension` wants it. */
  dir: string;
}

/** The emulator's cap on one extension archive. */
export const MAX_EXTENSION_BYTES = 64 * 1024 * 1024;

export class ExtensionStore {
  private readonly extensions: Extension[] = [];

  constructor(private readonly root: string) {}

  async add(zip: Uint8Array, fileName: string, name?: string): Promise<Extension> {
    // Local file header signature: an empty archive (end-of-central-directory only) is no extension either.
    if (zip.byteLength < 4 || zip[0] !== 0x50 || zip[1] !== 0x4b || zip[2] !== 0x03 || zip[3] !== 0x04) {
      throw new SessionError(400, "invalid_extension", "The extension file is not a zip archive");
    }
    if (zip.byteLength > MAX_EXTENSION_BYTES)
      throw new SessionError(413, "extension_too_large", `Extensions are limited to ${MAX_EXTENSION_BYTES} bytes`);
    await mkdir(this.root, { recursive: true });
    const id = randomUUID();
    const zipPath = join(this.root, `${id}.zip`);
    const unpacked = join(this.root, id);
    let dir: string;
    try {
      const files = await unpackZip(Buffer.from(zip), unpacked, 4 * MAX_EXTENSION_BYTES);
      // The manifest sits at the top, or one folder down when a folder was zipped; the shallowest one wins.
      const manifest = files
        .filter((f) => f === "manifest.json" || /^[^/]+\/manifest\.json$/.test(f))
        .sort((a, b) => a.length - b.length)[0];
      if (!manifest) throw new SessionError(400, "invalid_extension", "The extension archive has no manifest.json at its top");
      dir = dirname(join(unpacked, manifest));
      JSON.parse(await readFile(join(dir, "manifest.json"), "utf8"));
    } catch (err) {
      await rm(unpacked, { recursive: true, force: true });
      if (err instanceof SessionError) throw err;
      throw new SessionError(400, "invalid_extension", `The extension archive is not usable: ${(err as Error).message}`);
    }
    await writeFile(zipPath, zip);
    const now = new Date().toISOString();
    const extension = { id, name: name?.trim() || fileName.replace(/\.zip$/i, ""), createdAt: now, updatedAt: now, zipPath, dir };
    this.extensions.push(extension);
    return extension;
  }

  list(): Extension[] {
    return [...this.extensions];
  }

  /** Every id must be an uploaded extension (a session naming an unknown one is refused). */
  require(ids: string[]): Extension[] {
    return ids.map((id) => {
      const found = this.extensions.find((e) => e.id === id);
      if (!found) throw new SessionError(404, "not_found", `Extension ${id} not found`);
      return found;
    });
  }

  wire(e: Extension) {
    return { id: e.id, name: e.name, createdAt: e.createdAt, updatedAt: e.updatedAt };
  }
}
