// The embedded default sells at demo prices: the dev stack has a funded demo buyer, and the five lines the banner
// prints, run as they are by node, buy a search with nothing but that wallet.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFile } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { privateKeyToAccount } from "viem/accounts";
import { startDevStack, type DevStack } from "../../src/cli/dev-stack.js";
import { devBanner } from "../../src/cli/banner.js";

describe("the embedded default sells", () => {
  let stack: DevStack;
  beforeAll(async () => {
    stack = await startDevStack({ port: 0, logLevel: "error", emulator: { modules: ["x402"] } });
  }, 120_000);
  afterAll(async () => {
    await stack?.close();
  });

  it("has a funded demo buyer, and the banner's five-line @x402/fetch example buys a search with it", async () => {
    const key = stack.buyers.demo!;
    expect(key).toMatch(/^0x[0-9a-f]{64}$/);
    const buyer = privateKeyToAccount(key).address;
    const chain = stack.emulator.chain!;
    expect(await chain.balanceOf(buyer)).toBe(10_000_000n);
    const sales = stack.config.sales!;
    const banner = devBanner({
      gateway: stack.gateway.url,
      upstream: stack.emulator.controlUrl,
      chain: chain.rpcUrl,
      tenants: stack.tenants,
      buyer: { key, ...sales.accept[0]! },
      pid: process.pid,
    });
    const lines = banner.split("\n");
    const at = lines.findIndex((l) => l.includes("// Pay with a wallet"));
    expect(at).toBeGreaterThan(0);
    const code = lines.slice(at + 1, at + 6);
    expect(code.every((l) => l.startsWith("  ") && l.trim().length > 0)).toBe(true);
    expect(lines[at + 6]!.trim()).toBe("");
    // Run the five lines as printed (from a folder whose parent holds node_modules, so the imports resolve).
    const dir = join(process.cwd(), "node_modules", ".tollgate-banner-example");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `buy-${process.pid}-${Date.now()}.mjs`);
    writeFileSync(file, code.join("\n"));
    try {
      const { stdout } = await promisify(execFile)(process.execPath, [file], { timeout: 60_000 });
      expect(stdout).toMatch(/results/);
    } finally {
      rmSync(file, { force: true });
    }
    expect(10_000_000n - (await chain.balanceOf(buyer))).toBe(10_000n);
  });
});
