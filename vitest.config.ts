import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

// Node tests. Workers tests run in workerd through vitest.workers.config.ts.
export default defineConfig({
  // Tests run the emulator package from its source, as tsconfig.json's `paths` does for tsc and tsx.
  resolve: { alias: { "@tollgate/emulator": fileURLToPath(new URL("./emulator/index.ts", import.meta.url)) } },
  test: {
    include: ["test/**/*.test.ts", "middleware/**/*.test.ts", "src/**/*.test.ts", "config/**/*.test.ts", "emulator/**/*.test.ts"],
    exclude: ["test/workers/**", "node_modules/**"],
    pool: "forks",
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
