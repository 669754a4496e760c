// Large bodies stream through the runtime proxy in both directions: a 256 MiB upload and download leave the gateway's
// memory flat (the gateway runs in its own process so its RSS is its own).
import { afterAll, beforeAll, expect, it } from "vitest";
import { Readable } from "node:stream";
import { request } from "undici";
import { measureTransfer, startChildStack } from "./sandbox-child.js";

const SIZE = 256 * 1024 * 1024;
const CHUNK = Buffer.alloc(1024 * 1024, 0x61);
let s: Awaited<ReturnType<typeof startChildStack>>;
let id: string;
let token: string;

beforeAll(async () => {
  s = await startChildStack();
  const sbx = await s.hb.sandboxes.create({ imageName: "node" });
  id = sbx.id;
  const res = await request(`http://127.0.0.1:${s.child.port}/api/sandbox/${id}`, { headers: { "x-api-key": s.key } });
  token = ((await res.body.json()) as { token: string }).token;
  await sbx.exec("true");
}, 120_000);
afterAll(async () => s?.close());

function* chunks(total: number) {
  for (let sent = 0; sent < total; sent += CHUNK.length) yield CHUNK;
}

it("streams a 256 MiB upload and download without the gateway's memory growing", async () => {
  const baseline = s.child.rssBytes();
  const up = await measureTransfer(s.child, SIZE, async () => {
    const res = await request(`http://127.0.0.1:${s.child.port}/sandbox/${id}/files/upload?path=/home/ubuntu/big.bin`, {
      method: "PUT",
      headers: { authorization: `Bearer ${token}`, host: `localhost:${s.child.port}` },
      body: Readable.from(chunks(SIZE)),
    });
    const body = (await res.body.json()) as { bytesWritten: number };
    expect(res.statusCode).toBe(200);
    return body.bytesWritten;
  });
  expect(up.moved).toBe(SIZE);
  const down = await measureTransfer(s.child, SIZE, async () => {
    const res = await request(`http://127.0.0.1:${s.child.port}/sandbox/${id}/files/download?path=/home/ubuntu/big.bin`, {
      headers: { authorization: `Bearer ${token}`, host: `localhost:${s.child.port}` },
    });
    expect(res.statusCode).toBe(200);
    let n = 0;
    for await (const c of res.body) n += (c as Buffer).length;
    return n;
  });
  expect(down.moved).toBe(SIZE);
  const mib = (b: number) => Math.round(b / 1024 / 1024);
  console.log(
    `upload ${up.mbPerSec.toFixed(0)} MB/s, download ${down.mbPerSec.toFixed(0)} MB/s; gateway RSS baseline ${mib(baseline)} MiB, peak ${mib(Math.max(up.peakRss, down.peakRss))} MiB`,
  );
  // A buffering proxy would hold hundreds of MiB here; streaming stays within a few tens.
  expect(up.peakRss - baseline).toBeLessThan(96 * 1024 * 1024);
  expect(down.peakRss - baseline).toBeLessThan(96 * 1024 * 1024);
}, 300_000);
