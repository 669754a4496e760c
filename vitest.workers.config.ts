import { defineConfig } from "vitest/config";
import { cloudflareTest } from "@cloudflare/vitest-pool-workers";

// Tests that run inside workerd, against the Worker entry built from wrangler.toml.
export default defineConfig({
  plugins: [cloudflareTest({ wrangler: { configPath: "./wrangler.toml" } })],
  test: {
    include: ["test/workers/**/*.test.ts"],
    // The emulator and the local chain run in Node; the Worker reaches them over 127.0.0.1.
    globalSetup: ["test/workers/global-setup.ts"],
    testTimeout: 60_000,
  },
});
