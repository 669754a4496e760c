// The emulator's own zip writer and reader (session download archives, uploaded extensions): round trip and refusals.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { deflateRawSync } from "node:zlib";
import { crc32, writeZip } from "../../emulator/sessions/zip-writer.js";
import { unpackZip } from "../../emulator/sessions/zip-reader.js";

let work: string;
beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), "control-zip-"));
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

async function zipOf(files: Record<string, string>): Promise<Buffer> {
  const dir = mkdtempSync(join(work, "src-"));
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), body);
  const out = join(dir, "..", `${Math.random().toString(36).slice(2)}.zip`);
  await writeZip(dir, out);
  return readFileSync(out);
}

/** Renames an entry in place (same length), in both its local and central headers. */
function renamed(zip: Buffer, from: string, to: string): Buffer {
  expect(from.length).toBe(to.length);
  return Buffer.from(zip.toString("latin1").split(from).join(to), "latin1");
}

describe("zip writer and reader", () => {
  it("computes the standard CRC-32", () => {
    expect(crc32(Buffer.from("123456789"))).toBe(0xcbf43926);
  });

  it("round-trips files through a stored archive", async () => {
    const zip = await zipOf({ "a.txt": "alpha", "b.json": "{}" });
    const out = join(work, "round");
    expect(await unpackZip(zip, out, 1000)).toEqual(["a.txt", "b.json"]);
    expect(readFileSync(join(out, "a.txt"), "utf8")).toBe("alpha");
  });

  it("reads deflated entries", async () => {
    const stored = await zipOf({ "d.txt": "x".repeat(1000) });
    // Re-pack the one entry as deflate: method 8, compressed size, data replaced.
    const deflated = deflateRawSync(Buffer.from("x".repeat(1000)));
    const local = stored.subarray(0, 30 + 5);
    const central = stored.subarray(30 + 5 + 1000, stored.length - 22);
    const end = Buffer.from(stored.subarray(stored.length - 22));
    const l = Buffer.from(local),
      c = Buffer.from(central);
    l.writeUInt16LE(8, 8);
    l.writeUInt32LE(deflated.length, 18);
    c.writeUInt16LE(8, 10);
    c.writeUInt32LE(deflated.length, 20);
    end.writeUInt32LE(l.length + deflated.length, 16);
    const out = join(work, "deflated");
    await unpackZip(Buffer.concat([l, deflated, c, end]), out, 10_000);
    expect(readFileSync(join(out, "d.txt"), "utf8")).toBe("x".repeat(1000));
  });

  it("refuses entries that leave the target directory, and archives that unpack too large", async () => {
    const escaping = renamed(await zipOf({ "abcevil.txt": "x" }), "abcevil.txt", "../evil.txt");
    await expect(unpackZip(escaping, join(work, "esc"), 1000)).rejects.toMatchObject({ status: 400, code: "invalid_extension" });
    expect(existsSync(join(work, "evil.txt"))).toBe(false);
    const absolute = renamed(await zipOf({ "xtmp-evil": "x" }), "xtmp-evil", "/tmp-evil");
    await expect(unpackZip(absolute, join(work, "abs"), 1000)).rejects.toMatchObject({ status: 400 });
    await expect(unpackZip(await zipOf({ "big.txt": "y".repeat(2000) }), join(work, "big"), 1000)).rejects.toMatchObject({ status: 400 });
    await expect(unpackZip(Buffer.from("not a zip at all, long enough to search"), join(work, "junk"), 1000)).rejects.toMatchObject({
      status: 400,
    });
  });

  it("writes an empty, valid archive for an empty directory", async () => {
    mkdirSync(join(work, "empty"));
    await writeZip(join(work, "empty"), join(work, "empty.zip"));
    const zip = readFileSync(join(work, "empty.zip"));
    expect(zip.length).toBe(22);
    expect(await unpackZip(zip, join(work, "empty-out"), 10)).toEqual([]);
  });
});
