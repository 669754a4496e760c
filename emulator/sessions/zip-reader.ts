// A minimal zip reader (stored and deflated entries) that unpacks an uploaded extension without leaving its directory.
import { mkdir, writeFile } from "node:fs/promises";
import { dirname, join, posix } from "node:path";
import { inflateRawSync } from "node:zlib";
import { SessionError } from "./session-error.js";

const invalid = (why: string) => new SessionError(400, "invalid_extension", `The extension archive is not usable: ${why}`);

/** Unpacks `zip` into `dir`; refuses encryption, zip64, absolute or `..` paths, and more than `maxBytes` unpacked. */
export async function unpackZip(zip: Buffer, dir: string, maxBytes: number): Promise<string[]> {
  let end = -1;
  for (let i = zip.length - 22; i >= Math.max(0, zip.length - 22 - 0xffff); i--) {
    if (zip.readUInt32LE(i) === 0x06054b50) {
      end = i;
      break;
    }
  }
  if (end < 0) throw invalid("no end of central directory");
  const count = zip.readUInt16LE(end + 10);
  let at = zip.readUInt32LE(end + 16);
  if (at === 0xffffffff || count === 0xffff) throw invalid("zip64 archives are not supported");
  const names: string[] = [];
  let total = 0;
  for (let n = 0; n < count; n++) {
    if (at + 46 > zip.length || zip.readUInt32LE(at) !== 0x02014b50) throw invalid("corrupt central directory");
    const flags = zip.readUInt16LE(at + 8);
    const method = zip.readUInt16LE(at + 10);
    const compressed = zip.readUInt32LE(at + 20);
    const size = zip.readUInt32LE(at + 24);
    const nameLen = zip.readUInt16LE(at + 28);
    const skip = nameLen + zip.readUInt16LE(at + 30) + zip.readUInt16LE(at + 32);
    const local = zip.readUInt32LE(at + 42);
    const name = zip.subarray(at + 46, at + 46 + nameLen).toString("utf8");
    at += 46 + skip;
    if (flags & 1) throw invalid("encrypted entries are not supported");
    const normal = posix.normalize(name.replace(/\\/g, "/"));
    if (normal.startsWith("/") || normal === ".." || normal.startsWith("../")) throw invalid(`entry ${name} leaves the archive`);
    if (name.endsWith("/")) {
      await mkdir(join(dir, normal), { recursive: true });
      continue;
    }
    total += size;
    if (total > maxBytes) throw invalid(`more than ${maxBytes} bytes unpacked`);
    if (zip.readUInt32LE(local) !== 0x04034b50) throw invalid("corrupt local header");
    const start = local + 30 + zip.readUInt16LE(local + 26) + zip.readUInt16LE(local + 28);
    const raw = zip.subarray(start, start + compressed);
    let data: Buffer;
    if (method === 0) data = raw;
    else if (method === 8) data = inflateRawSync(raw, { maxOutputLength: Math.max(1, size) });
    else throw invalid(`compression method ${method} is not supported`);
    if (data.length !== size) throw invalid(`entry ${name} has the wrong size`);
    await mkdir(dirname(join(dir, normal)), { recursive: true });
    await writeFile(join(dir, normal), data);
    names.push(normal);
  }
  return names;
}
