// Sizes and symlinks as the service has them, straight against the emulator with the unmodified SDK (the same
// specification runs through the gateway in test/gateway/sandboxes-fidelity.test.ts).
import { afterAll, beforeAll, describe } from "vitest";
import { startSandboxHarness, type SandboxHandle, type SandboxHarness } from "./sandboxes-harness.js";
import { sandboxSizesSpec } from "./sandboxes-fidelity-spec.js";

let h: SandboxHarness;
const made: SandboxHandle[] = [];

beforeAll(async () => {
  h = await startSandboxHarness();
});
afterAll(async () => {
  await Promise.all(made.map((s) => s.stop().catch(() => {})));
  await h?.close();
});

describe("sizes seen from inside, directly", () => sandboxSizesSpec(() => h.hb, (s) => made.push(s)));
