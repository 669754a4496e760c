// Sizes and symlinks as the service has them, through Tollgate with the unmodified SDK holding only a tenant key (the
// same specification runs directly in test/emulator/sandboxes-fidelity.test.ts).
import { afterAll, beforeAll, describe } from "vitest";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import { sandboxSizesSpec, sandboxSymlinkSpec } from "../emulator/sandboxes-fidelity-spec.js";
import { startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";
import { assertNoUpstreamSecrets } from "./sandboxes-leaks.js";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

let s: SandboxStack;
let sbx: SandboxHandle;
const made: SandboxHandle[] = [];

beforeAll(async () => {
  s = await startSandboxStack();
  sbx = await s.alice.sandboxes.create({ imageName: "node" });
  made.push(sbx);
});
afterAll(async () => {
  await Promise.all(made.map((x) => x.stop().catch(() => {})));
  if (s) await assertNoUpstreamSecrets(s);
  await s?.close();
});

describe("sizes seen from inside, through the gateway", () =>
  sandboxSizesSpec(
    () => s.alice,
    (x) => made.push(x),
  ));
describe("symlinks, through the gateway", () => sandboxSymlinkSpec(() => sbx));
