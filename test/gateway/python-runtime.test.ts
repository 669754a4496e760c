// The Python SDK's get_credit_info() and its async recursive directory watch (its 1.3.0 models; the calls its client
// makes), straight at the emulator and through the gateway: credit info parses as integers, and a file written in a
// subdirectory — one that existed before the watch, and one made after it — is seen written, every round.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";
import { pythonSdkDir, runPython } from "../helpers/python-sdk.js";

const DRIVER = join(process.cwd(), "test/python/runtime_checks.py");
const ROUNDS = "20";

let emu: EmulatorHandle;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
let key: string;

beforeAll(async () => {
  emu = await startEmulator({ modules: ["sandboxes"] });
  key = generateTenantKey();
  const runtimePort = new URL(emu.runtimeUrl).port;
  gw = await startTestGateway(
    {
      upstream: { baseUrl: emu.controlUrl, allowedHosts: [`127.0.0.1:${runtimePort}`, `localhost:${runtimePort}`] },
      tenants: [{ id: "ops", keys: [{ hash: await hashTenantKey(key) }], scopes: ["admin", "sandboxes"] }],
    },
    { upstreamApiKey: emu.apiKey, tokenSecret: randomBytes(32).toString("hex") },
  );
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await emu?.close();
});

describe("the Python SDK's credit info and async recursive watch", { timeout: 240_000 }, () => {
  it("pass direct and through the gateway, alike", async () => {
    const sdk = pythonSdkDir();
    const direct = JSON.parse(await runPython(DRIVER, [emu.controlUrl, emu.apiKey, sdk, ROUNDS]));
    const through = JSON.parse(await runPython(DRIVER, [`http://127.0.0.1:${gw.port}`, key, sdk, ROUNDS]));
    for (const run of [direct, through]) {
      expect(run.creditInfo).toEqual({ types: ["int"], limit: 1_000_000, consistent: true });
      expect(run.watch).toMatchObject({ rounds: 20, missedWrites: [], done: { type: "done", active: false, recursive: true } });
      expect(run.watch.types).toEqual(expect.arrayContaining(["create", "write"]));
    }
    // Alike but for the watch's extra event kinds: a write may also surface as a rename (an atomic replace), as the
    // file system's timing decides, on either path.
    const comparable = (run: { watch: { types: string[] } }) => ({ ...run, watch: { ...run.watch, types: undefined } });
    expect(comparable(through)).toEqual(comparable(direct));
  });
});
