import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { parse } from "smol-toml";
import { defineConfig, type Plugin } from "vitest/config";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";

/**
 * The stand-ins the bundle swaps in (wrangler.toml [alias], deploy/worker-shims/), applied here too so these tests run
 * the code that ships: in the Worker's modules only, not in the tests' own imports (a test reads the chain with viem's
 * createPublicClient) nor in the global setup's (the emulator and the chain, in Node). Each name exactly, as wrangler's
 * esbuild alias does: "viem" is replaced, "viem/accounts" is not.
 */
function workerAliases(): Plugin {
  const table = (parse(readFileSync("wrangler.toml", "utf8")) as { alias?: Record<string, string> }).alias ?? {};
  const to = new Map(Object.entries(table).map(([name, path]) => [name, resolve(path)]));
  const tests = resolve("test") + "/";
  return {
    name: "tollgate-worker-aliases",
    enforce: "pre",
    resolveId(source, importer) {
      // "__vitest__" is the global setup's environment; the Worker's modules are resolved in the pool's own.
      if (this.environment?.name === "__vitest__" || importer?.startsWith(tests)) return null;
      return to.get(source) ?? null;
    },
  };
}

// Tests that run inside workerd, against the Worker entry built from wrangler.toml.
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" } }), workerAliases()],
  test: {
    include: ["test/workers/**/*.test.ts"],
    // The emulator and the local chain run in Node; the Worker reaches them over 127.0.0.1.
    globalSetup: ["test/workers/global-setup.ts"],
    testTimeout: 60_000,
  },
});
