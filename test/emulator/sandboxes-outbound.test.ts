// What stands for the internet from inside an emulator sandbox (emulator/sandboxes/outbound.ts), through the unmodified
// SDK: a listed destination is reached as the sandbox's egress list allows; an entry may name a port (`host:port`), so
// one loopback destination can be denied while another stays open; a refused destination is refused at once
// (ECONNREFUSED, no socket left hanging), and a network change applies to the connections made after it.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startSandboxHarness, type SandboxHarness } from "./sandboxes-harness.js";

let h: SandboxHarness;
const servers: Server[] = [];
let a: number;
let b: number;

async function serve(name: string): Promise<number> {
  const s = createServer((_req, res) => res.end(name));
  servers.push(s);
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  return (s.address() as AddressInfo).port;
}

/** From inside the sandbox: the answer's text, or "refused <code> <ms>". */
const script = (port: number) =>
  `node -e 'const t0 = Date.now(); const t = setTimeout(() => console.log("hung"), 10000); fetch("http://127.0.0.1:${port}/").then(async (r) => { clearTimeout(t); console.log(await r.text()); }, (e) => { clearTimeout(t); console.log("refused", e.cause?.code, Date.now() - t0); })'`;

beforeAll(async () => {
  h = await startSandboxHarness();
  a = await serve("server-a");
  b = await serve("server-b");
  h.emu.internet.add(`127.0.0.1:${a}`);
  h.emu.internet.add(`127.0.0.1:${b}`);
}, 120_000);

afterAll(async () => {
  await h?.close();
  for (const s of servers) await new Promise((r) => s.close(r));
});

describe("the way out of an emulator sandbox", () => {
  it("denies one host:port while another of the same host stays open, and refuses at once", async () => {
    const sbx = await h.hb.sandboxes.create({ imageName: "node", denyOut: [`127.0.0.1:${a}`] });
    try {
      const [word, code, ms] = (await sbx.exec(script(a))).stdout.trim().split(" ");
      expect([word, code]).toEqual(["refused", "ECONNREFUSED"]);
      expect(Number(ms)).toBeLessThan(1_000);
      expect((await sbx.exec(script(b))).stdout.trim()).toBe("server-b");
    } finally {
      await sbx.stop();
    }
  });

  it("a network change opens and shuts a destination for the connections made after it", async () => {
    const sbx = await h.hb.sandboxes.create({ imageName: "node", allowInternetAccess: false });
    try {
      expect((await sbx.exec(script(a))).stdout.trim()).toMatch(/^refused ECONNREFUSED/);
      await sbx.updateNetwork({ allowInternetAccess: false, allowOut: [`127.0.0.1:${a}`] });
      expect((await sbx.exec(script(a))).stdout.trim()).toBe("server-a");
      expect((await sbx.exec(script(b))).stdout.trim()).toMatch(/^refused ECONNREFUSED/);
      await sbx.updateNetwork({ allowInternetAccess: true, denyOut: [`127.0.0.1:${a}`] });
      expect((await sbx.exec(script(a))).stdout.trim()).toMatch(/^refused ECONNREFUSED/);
      expect((await sbx.exec(script(b))).stdout.trim()).toBe("server-b");
    } finally {
      await sbx.stop();
    }
  });
});
