// Sizes and symlinks as the service has them, straight against the emulator with the unmodified SDK (the same
// specification runs through the gateway in test/gateway/sandboxes-fidelity.test.ts).
import { afterAll, beforeAll, describe } from "vitest";
import { startSandboxHarness, type SandboxHandle, type SandboxHarness } from "./sandboxes-harness.js";
import { sandboxSizesSpec, sandboxSymlinkSpec } from "./sandboxes-fidelity-spec.js";

let h: SandboxHarness;
let sbx: SandboxHandle;
const made: SandboxHandle[] = [];

beforeAll(async () => {
  h = await startSandboxHarness();
  sbx = await h.hb.sandboxes.create({ imageName: "node" });
  made.push(sbx);
});
afterAll(async () => {
  await Promise.all(made.map((s) => s.stop().catch(() => {})));
  await h?.close();
});

describe("sizes seen from inside, directly", () =>
  sandboxSizesSpec(
    () => h.hb,
    (s) => made.push(s),
  ));
describe("symlinks, directly", () => sandboxSymlinkSpec(() => sbx));
