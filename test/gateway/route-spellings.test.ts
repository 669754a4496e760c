// Paths are read the way the upstream will read them: every spelling of a rewritten runtime route is either rewritten
// like the canonical one or refused with 400, never passed through; another tenant's id in any spelling answers 404.
import { request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import { gatewayCall, startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";
import { assertNoUpstreamSecrets } from "./sandboxes-leaks.js";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

let s: SandboxStack;
let a: SandboxHandle;
let b: SandboxHandle;
let aliceToken: string;

/** A request whose path goes on the wire byte for byte (no client-side URL normalisation). */
function raw(
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: string,
): Promise<{ status: number; json: any; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port: s.gw.port,
        method,
        path,
        headers: {
          host: `localhost:${s.gw.port}`,
          ...(body ? { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: any;
          try {
            json = JSON.parse(text);
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, json, text });
        });
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

beforeAll(async () => {
  s = await startSandboxStack();
  a = await s.alice.sandboxes.create({ imageName: "node" });
  b = await s.bob.sandboxes.create({ imageName: "node" });
  aliceToken = (await gatewayCall(s, "GET", `/api/sandbox/${a.id}`, { headers: { "x-api-key": s.keys.alice } })).json.token;
  await a.files.writeText("/tmp/spelled.txt", "spelled");
});
afterAll(async () => {
  if (s) await assertNoUpstreamSecrets(s);
  await s?.close();
});

describe("presigned URLs in every spelling", () => {
  const spellings = (op: "upload" | "download") => [
    `/files/presign-${op}`,
    `/files/presign%2D${op}`,
    `/files/presign%2d${op}`,
    `/files/%70resign-${op}`,
    `/files/x/../presign-${op}`,
    `/files/x/%2e%2e/presign-${op}`,
    `//files///presign-${op}`,
    `/./files/presign-${op}`,
  ];
  it.each([...spellings("download").map((p) => ["download", p]), ...spellings("upload").map((p) => ["upload", p])])(
    "presign-%s spelled %s hands out the gateway's URL",
    async (_op, rest) => {
      const r = await raw(
        "POST",
        `/sandbox/${a.id}${rest}`,
        { authorization: `Bearer ${aliceToken}` },
        JSON.stringify({ path: "/tmp/spelled.txt" }),
      );
      expect(r.status).toBe(200);
      expect(r.json.url.startsWith(`${s.gatewayUrl}/sandbox/${a.id}/files/presigned?ticket=`)).toBe(true);
    },
  );

  it.each([
    ["an encoded slash", `/sandbox/${"ID"}/files%2Fpresign-download`],
    ["an encoded backslash", `/sandbox/${"ID"}/files%5Cpresign-download`],
    ["an invalid escape", `/sandbox/${"ID"}/files/presign%ZZdownload`],
    ["an encoded NUL", `/sandbox/${"ID"}/files/presign-download%00`],
    ["a control character", `/sandbox/${"ID"}/files/presign-download%0D%0A`],
  ])("refuses %s with 400 invalid_path and forwards nothing", async (_what, path) => {
    const r = await raw(
      "POST",
      path.replace("ID", a.id),
      { authorization: `Bearer ${aliceToken}` },
      JSON.stringify({ path: "/tmp/spelled.txt" }),
    );
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ code: "invalid_path" });
  });

  it("answers a malformed escape before authentication with a JSON 400, not a 500", async () => {
    for (const path of ["/sandbox/%ZZ/exec", "/api/sandbox/%E0%A4%A", "/sandbox/abc/files/presigned%", "/devtools/browser/%"]) {
      const r = await raw("GET", path, {});
      expect(r.status, path).toBe(400);
      expect(r.json, path).toMatchObject({ code: "invalid_path" });
    }
  });
});

describe("ownership in every spelling", () => {
  it("answers 404 for bob's sandbox however alice spells its id or route", async () => {
    const enc = [...b.id].map((ch) => `%${ch.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");
    for (const path of [`/api/sandbox/${enc}`, `/api/sandbox/x/../${b.id}`, `//api//sandbox//${b.id}/`, `/api/%73andbox/${b.id}`]) {
      const r = await raw("GET", path, { "x-api-key": s.keys.alice });
      expect(r.status, path).toBe(404);
      expect(r.json.code, path).toBe("not_found");
    }
    for (const [method, path] of [
      ["PUT", `/api/sandbox/${enc}/stop`],
      ["POST", `/api/sandbox/./${b.id}/expose`],
      ["PUT", `/api/sandbox/${b.id}/./network`],
    ] as const) {
      const r = await raw(method, path, { "x-api-key": s.keys.alice }, "{}");
      expect(r.status, `${method} ${path}`).toBe(404);
    }
  });

  it("answers route_not_fronted for operations no row declares, whatever the method", async () => {
    for (const [method, path] of [
      ["PUT", `/api/snapshots/anything`],
      ["PATCH", `/api/snapshots/anything`],
      ["POST", `/api/snapshots/anything`],
      ["DELETE", `/api/sandbox/${a.id}`],
      ["GET", `/sandbox/${a.id}/not-a-runtime-route`],
    ] as const) {
      const r = await raw(
        method,
        path,
        { "x-api-key": s.keys.alice, authorization: `Bearer ${aliceToken}` },
        method === "GET" ? undefined : "{}",
      );
      expect(r.status, `${method} ${path} ${r.text}`).toBe(404);
      expect(r.json, `${method} ${path}`).toMatchObject({ code: "route_not_fronted", method });
    }
  });
});
