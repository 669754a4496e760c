// Sandbox users through Tollgate with the unmodified SDK holding only a tenant key: `ubuntu` and `root` on every
// file, process, terminal and watch operation, root writing into /home/ubuntu, and sudo (the same specification
// as test/emulator/sandboxes-users.test.ts runs directly).
import { afterAll, beforeAll, describe } from "vitest";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import { sandboxUsersSpec } from "../emulator/sandboxes-users-spec.js";
import { startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";
import { assertNoUpstreamSecrets } from "./sandboxes-leaks.js";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

let s: SandboxStack;
let sbx: SandboxHandle;

beforeAll(async () => {
  s = await startSandboxStack();
  sbx = await s.alice.sandboxes.create({ imageName: "ubuntu" });
});
afterAll(async () => {
  if (s) await assertNoUpstreamSecrets(s);
  await s?.close();
});

describe("users, through the gateway", () => sandboxUsersSpec(() => sbx));
