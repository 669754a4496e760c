// The emulator answers in the current service's shapes, the ones both SDKs parse: a real region by default, sessions
// with proxyDataConsumed and liveUrl (its own live page), the extensions list as {extensions}, booleans in query strings
// as Python writes them (`True`), and `mode: null` on a file write leaving the mode alone.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import puppeteer from "puppeteer-core";
import { findChromium } from "../../emulator/sessions/chromium-binary.js";
import { startEmulator, type EmulatorHandle } from "../../emulator/index.js";
import { node, parsesUnder, python } from "../fixtures/sdk-models.js";

let emu: EmulatorHandle;
const api = async (method: string, path: string, body?: unknown) => {
  const res = await request(`${emu.controlUrl}${path}`, {
    method: method as "GET",
    headers: { "x-api-key": emu.apiKey, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  expect(res.statusCode, `${method} ${path}`).toBe(200);
  return (await res.body.json()) as any;
};

beforeAll(async () => {
  emu = await startEmulator({ modules: ["sessions", "sandboxes"] });
}, 120_000);
afterAll(async () => emu?.close());

describe("sessions", () => {
  it("carry proxyDataConsumed (a string, as the Python SDK reads it) and a liveUrl, parsing under both SDKs", async () => {
    const s = await api("POST", "/api/session", {});
    try {
      expect(s.proxyDataConsumed).toBe("0");
      expect(s.liveUrl).toBe(`${emu.controlUrl}/live/${s.id}?token=${encodeURIComponent(s.token)}`);
      expect(parsesUnder(python.SessionDetail, s)).toEqual([]);
      expect(parsesUnder(node.SessionDetail, s)).toEqual([]);
      const list = await api("GET", "/api/sessions");
      expect(parsesUnder(python.SessionListResponse, list)).toEqual([]);
      expect(parsesUnder(node.SessionListResponse, list)).toEqual([]);
    } finally {
      await api("PUT", `/api/session/${s.id}/stop`);
    }
  });

  it("serve their own live page for the session's token, and nothing for a wrong one", async () => {
    const s = await api("POST", "/api/session", {});
    try {
      const page = await request(s.liveUrl);
      expect(page.statusCode).toBe(200);
      expect(await page.body.text()).toContain("Page.startScreencast");
      const viewer = await puppeteer.launch({ executablePath: (await findChromium()).path, headless: true, args: ["--no-sandbox"] });
      try {
        const v = await viewer.newPage();
        await v.goto(s.liveUrl);
        await v.waitForFunction(() => (document.getElementById("screen") as HTMLImageElement).src.startsWith("data:image/jpeg"), {
          timeout: 20_000,
        });
      } finally {
        await viewer.close();
      }
      const other = await api("POST", "/api/session", {});
      await api("PUT", `/api/session/${other.id}/stop`);
      const wrong = await request(`${emu.controlUrl}/live/${s.id}?token=${encodeURIComponent(other.token)}`);
      expect(wrong.statusCode).toBe(404);
      await wrong.body.dump();
    } finally {
      await api("PUT", `/api/session/${s.id}/stop`);
    }
  });

  it("list extensions as {extensions: […]}", async () => {
    expect(await api("GET", "/api/extensions/list")).toEqual({ extensions: [] });
  });
});

describe("sandboxes", () => {
  let sbx: any;
  const runtime = (path: string, init: { method?: string; body?: unknown } = {}) =>
    request(`${sbx.runtime.baseUrl.replace("localhost", "127.0.0.1")}${path}`, {
      method: (init.method ?? "GET") as "GET",
      headers: { authorization: `Bearer ${sbx.token}`, "content-type": "application/json" },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    }).then(async (r) => ({ status: r.statusCode, json: (await r.body.json()) as any }));

  beforeAll(async () => {
    sbx = await api("POST", "/api/sandbox", { imageName: "node" });
  }, 120_000);
  afterAll(async () => {
    if (sbx) await api("PUT", `/api/sandbox/${sbx.id}/stop`);
  });

  it("default to the region us-central, which both SDKs accept", async () => {
    expect(sbx.region).toBe("us-central");
    expect(parsesUnder(python.SandboxDetail, sbx)).toEqual([]);
    expect(parsesUnder(node.SandboxDetail, sbx)).toEqual([]);
    const east = await api("POST", "/api/sandbox", { imageName: "node", region: "us-east" });
    expect(east.region).toBe("us-east");
    await api("PUT", `/api/sandbox/${east.id}/stop`);
  });

  it("read includeOutput=True (Python's spelling) like includeOutput=true", async () => {
    const t = await runtime("/pty", { method: "POST", body: { command: "echo", args: ["hi"] } });
    await runtime(`/pty/${t.json.pty.id}/wait`, { method: "POST", body: { timeoutMs: 5000 } });
    for (const flag of ["true", "True", "TRUE"])
      expect((await runtime(`/pty/${t.json.pty.id}?includeOutput=${flag}`)).json.pty.output, flag).toBeDefined();
    expect((await runtime(`/pty/${t.json.pty.id}?includeOutput=False`)).json.pty.output).toBeUndefined();
  });

  it("leave a file's mode alone on a write or append with mode: null", async () => {
    const path = "/home/ubuntu/run.sh";
    await runtime("/files/write", { method: "POST", body: { files: [{ path, data: "#!/bin/sh\n", mode: "755" }] } });
    await runtime("/files/write", { method: "POST", body: { files: [{ path, data: "echo more\n", append: true, mode: null }] } });
    await runtime("/files/write", { method: "POST", body: { files: [{ path, data: "#!/bin/sh\necho new\n", mode: null }] } });
    const stat = await runtime(`/files/stat?path=${encodeURIComponent(path)}`);
    expect(stat.json.file).toMatchObject({ mode: 0o755, size: 19 });
  });
});
