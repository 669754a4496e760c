// The Python SDK's remote image builds (its 1.3.0 models, its calls: reuse, a Docker image as a manifest of layers, a
// Dockerfile context as a manifest of bundles, each missing blob PUT to its presigned `uploads[]` URL as given), run
// straight at the emulator and through the gateway: the two runs are the same, step by step.
import { mkdtempSync, rmSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";
import { pythonSdkDir, runPython } from "../helpers/python-sdk.js";

const DRIVER = join(process.cwd(), "test/python/image_build.py");

let direct: EmulatorHandle;
let behind: EmulatorHandle;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
let key: string;
let sandboxKey: string;
let work: string;

beforeAll(async () => {
  [direct, behind] = await Promise.all([startEmulator({ modules: ["sandboxes"] }), startEmulator({ modules: ["sandboxes"] })]);
  key = generateTenantKey();
  sandboxKey = generateTenantKey();
  gw = await startTestGateway(
    {
      upstream: { baseUrl: behind.controlUrl },
      tenants: [
        { id: "ops", keys: [{ hash: await hashTenantKey(key) }], scopes: ["admin", "sandboxes"] },
        { id: "dev", keys: [{ hash: await hashTenantKey(sandboxKey) }], scopes: ["sandboxes"] },
      ],
    },
    { upstreamApiKey: behind.apiKey, tokenSecret: randomBytes(32).toString("hex") },
  );
  work = mkdtempSync(join(tmpdir(), "py-image-builds-"));
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await Promise.all([direct?.close(), behind?.close()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the Python SDK's remote image builds", { timeout: 240_000 }, () => {
  it("reuse and a Dockerfile context build with uploads answer the same through the gateway as direct", async () => {
    const sdk = pythonSdkDir();
    const gatewayUrl = `http://127.0.0.1:${gw.port}`;
    const [straight, through] = await Promise.all([
      runPython(DRIVER, [direct.controlUrl, direct.apiKey, sdk, work]),
      runPython(DRIVER, [gatewayUrl, key, sdk, work]),
    ]);
    const a = JSON.parse(straight) as Array<Record<string, any>>;
    const b = JSON.parse(through) as Array<Record<string, any>>;
    expect(b).toEqual(a);
    const by = (name: string) => b.find((s) => s.step === name)!;
    expect(by("image.reuse.miss").answer).toEqual({ hit: false });
    expect(by("image.reuse.hit").answer).toMatchObject({ hit: true, build: { status: "completed", imageName: "py-image-again" } });
    expect(by("image.uploads").sent).toEqual([expect.objectContaining({ status: 200, method: "PUT" })]);
    expect(by("context.uploads").sent).toHaveLength(1);
    expect(by("context.again.uploads").sent).toEqual([]);
    expect(by("context.wait").answer.metadata).toMatchObject({
      inputFormat: "dockerfile_context_manifest_v1",
      dockerfilePath: "Dockerfile",
      ignoredInstructions: ["FROM", "RUN"],
      imageInit: { env: { MODE: "context" }, args: ["sleep", "60"], workingDir: "/srv" },
    });
  });

  it("relays uploads[] unchanged: presigned URLs on the storage host, neither the gateway's nor the upstream API's", async () => {
    const digest = "a".repeat(64);
    const res = await fetch(`http://127.0.0.1:${gw.port}/api/images/builds`, {
      method: "POST",
      headers: { "x-api-key": key, "content-type": "application/json" },
      body: JSON.stringify({
        imageName: "relay-check",
        inputSha256: "b".repeat(64),
        inputSizeBytes: 10,
        inputFormat: "dockerfile_context_manifest_v1",
        dockerfilePath: "Dockerfile",
        contextManifest: {
          version: 1,
          dockerfilePath: "Dockerfile",
          contextMode: "sparse",
          bundles: [{ sha256: digest, sizeBytes: 5, uncompressedSizeBytes: 9, entryCount: 1 }],
        },
      }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { uploads: Array<{ url: string; sha256: string }> };
    expect(body.uploads).toHaveLength(1);
    const url = new URL(body.uploads[0]!.url);
    expect(url.origin).toBe(behind.storageUrl);
    expect(url.origin).not.toBe(behind.controlUrl);
    expect(body.uploads[0]!.sha256).toBe(digest);
  });

  it("keeps image builds for admin keys, as the image catalog is the operator's; a bad new field is refused by name", async () => {
    const reuse = { imageName: "x", sourceImageDigest: `sha256:${"c".repeat(64)}` };
    const post = (k: string, path: string, body: unknown) =>
      fetch(`http://127.0.0.1:${gw.port}${path}`, {
        method: "POST",
        headers: { "x-api-key": k, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const refused = await post(sandboxKey, "/api/images/builds/reuse", reuse);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({ code: expect.any(String), message: expect.any(String) });
    const ok = await post(key, "/api/images/builds/reuse", reuse);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({ hit: false });
    const bad = await post(key, "/api/images/builds", {
      imageName: "x",
      inputSha256: "d".repeat(64),
      inputSizeBytes: 1,
      inputFormat: "docker_image_manifest_v1",
      dockerImageManifest: {
        imageDigest: `sha256:${"e".repeat(64)}`,
        config: { sha256: "f".repeat(64), sizeBytes: 2, dataBase64: "e30=" },
        layers: [],
        extra: 1,
      },
    });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ code: "unknown_field", message: expect.stringContaining("dockerImageManifest.extra") });
  });
});
