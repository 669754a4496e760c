// Uploaded browser extensions: the zip kept per extension, listed for the team, checked when a session names them.
import { randomUUID } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { SessionError } from "./session-error.js";

export interface Extension {
  id: string;
  name: string;
  createdAt: string;
  updatedAt: string;
  zipPath: string;
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
    if (zip.byteLength > MAX_EXTENSION_BYTES) throw new SessionError(413, "extension_too_large", `Extensions are limited to ${MAX_EXTENSION_BYTES} bytes`);
    await mkdir(this.root, { recursive: true });
    const id = randomUUID();
    const zipPath = join(this.root, `${id}.zip`);
    await writeFile(zipPath, zip);
    const now = new Date().toISOString();
    const extension = { id, name: name?.trim() || fileName.replace(/\.zip$/i, ""), createdAt: now, updatedAt: now, zipPath };
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
