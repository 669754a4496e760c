import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

/**
 * The runtime plane's gateway suites, run a second time on the standard path (TOLLGATE_DIRECT_RELAY=off: every answer
 * through the chain's Response, no socket-to-socket relay), so the Node fast path and the standard path pass the same
 * tests.
 */
const RUNTIME_PLANE = [
  "test/gateway/sandboxes.test.ts",
  "test/gateway/sandboxes-isolation.test.ts",
  "test/gateway/sandboxes-streams.test.ts",
  "test/gateway/sandboxes-users.test.ts",
  "test/gateway/sandboxes-fidelity.test.ts",
  "test/gateway/keyless-sandbox.test.ts",
  "test/gateway/ports-mode.test.ts",
  "test/gateway/fast-path.test.ts",
];

// Node tests. Workers tests run in workerd through vitest.workers.config.ts.
export default defineConfig({
  // Tests run the emulator package from its source, as tsconfig.json's `paths` does for tsc and tsx.
  resolve: { alias: { "@tollgate/emulator": fileURLToPath(new URL("./emulator/index.ts", import.meta.url)) } },
  test: {
    exclude: ["test/workers/**", "node_modules/**"],
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
    projects: [
      {
        extends: true,
        test: {
          name: "node",
          include: ["test/**/*.test.ts", "middleware/**/*.test.ts", "src/**/*.test.ts", "config/**/*.test.ts", "emulator/**/*.test.ts"],
        },
      },
      { extends: true, test: { name: "standard-path", include: RUNTIME_PLANE, env: { TOLLGATE_DIRECT_RELAY: "off" } } },
    ],
  },
});
