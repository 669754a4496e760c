// Tenant secrets in sandboxes through the Worker: `tollgate dev --worker` (the gateway as the Worker under wrangler dev,
// workerd on a socket, state on Durable Objects) in front of the emulator, driven by the unmodified SDK. The same
// must-show as on Node (test/gateway/secrets-sandbox.test.ts): printenv and /proc/*/environ hold only the placeholder;
// a process in the sandbox reaches a local test server through $TOLLGATE_EGRESS carrying the real value; the placeholder
// is refused for another host, after the sandbox stops (through the gateway, or by its own timeout, unseen), and another
// tenant's carries that tenant's value; the secret's host is denied to the sandbox directly (the egress floor).
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startWorkerDev, type WorkerDev } from "../../src/cli/dev-worker.js";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

const VALUE = `sk-acme-${randomBytes(16).toString("hex")}`;
const OTHER_VALUE = `sk-initech-${randomBytes(16).toString("hex")}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let dev: WorkerDev;
let gw: string;
let server: Server;
let serverHost: string;
const seen: Array<{ url: string; headers: IncomingHttpHeaders }> = [];
let acme: Hyperbrowser;
let sbx: SandboxHandle;
let placeholder: string;

const put = (key: string, name: string, body: object) =>
  fetch(`${gw}/_tollgate/secrets/${name}`, {
    method: "PUT",
    headers: { "x-api-key": key, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
/** A request to the egress as a process in a sandbox makes it (the placeholder in a header). */
const viaEgress = async (path: string, headers: Record<string, string>) => {
  const res = await fetch(`${gw}/_tollgate/egress/${path}`, { headers });
  const text = await res.text();
  return { status: res.status, text, code: text.startsWith("{") ? (JSON.parse(text) as { code?: string }).code : undefined };
};
/** Runs in the sandbox: a request through $TOLLGATE_EGRESS with the placeholder, printing the status and the body. */
const inside = (path: string) =>
  `node -e 'fetch(process.env.TOLLGATE_EGRESS + "${path}", { headers: { authorization: "Bearer " + process.env.OPENAI } }).then(async (r) => console.log(r.status, await r.text()), (e) => console.log("failed", e.cause?.code))'`;

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url!, headers: req.headers });
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ ok: true, path: req.url }));
  });
  // A host of its own (127.0.0.2): the Worker is reached at localhost, so the floor can deny this one alone.
  await new Promise<void>((r) => server.listen(0, "127.0.0.2", r));
  serverHost = `127.0.0.2:${(server.address() as AddressInfo).port}`;
  dev = await startWorkerDev();
  gw = `http://localhost:${new URL(dev.gateway).port}`;
  dev.emulator.internet.add(serverHost);
  expect((await put(dev.tenants.acme, "OPENAI", { value: VALUE, hosts: [serverHost], paths: ["/v1/"] })).status).toBe(201);
  expect((await put(dev.tenants.initech, "OPENAI", { value: OTHER_VALUE, hosts: [serverHost] })).status).toBe(201);
  acme = new Hyperbrowser({ apiKey: dev.tenants.acme, baseUrl: gw });
  sbx = await acme.sandboxes.create({ imageName: "node" });
}, 180_000);

afterAll(async () => {
  await sbx?.stop().catch(() => {});
  await dev?.close();
  await new Promise((r) => server?.close(r));
});

describe.sequential("tenant secrets through the Worker under wrangler dev", () => {
  it("an exec, a process's /proc/<pid>/environ and a file hold only the placeholder, and TOLLGATE_EGRESS", async () => {
    placeholder = (await sbx.exec("printenv OPENAI")).stdout.trim();
    expect(placeholder).toMatch(/^tg_sec_[A-Za-z0-9_-]{32}$/);
    expect((await sbx.exec("printenv TOLLGATE_EGRESS")).stdout.trim()).toBe(`${gw}/_tollgate/egress`);
    const proc = await sbx.processes.start("sleep 30");
    const environ = await sbx.exec(`sh -c 'cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n" | grep -a OPENAI'`);
    expect(environ.stdout).toContain(`OPENAI=${placeholder}`);
    expect(environ.stdout).not.toContain(VALUE);
    await sbx.exec("sh -c 'env > /home/ubuntu/env.txt'");
    expect(await sbx.files.readText("/home/ubuntu/env.txt")).not.toContain(VALUE);
    await proc.kill();
  });

  it("a process in the sandbox reaches the test server through $TOLLGATE_EGRESS with the real value", async () => {
    const run = await sbx.exec(inside("/OPENAI/v1/inside"));
    expect(run.stdout.trim()).toBe('200 {"ok":true,"path":"/v1/inside"}');
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(run.stdout).not.toContain(VALUE);
  });

  it("the secret's host is denied to the sandbox directly (the egress floor)", async () => {
    const before = seen.length;
    const direct = `node -e 'fetch("http://${serverHost}/v1/direct").then((r) => console.log(r.status), (e) => console.log("refused", e.cause?.code))'`;
    expect((await sbx.exec(direct)).stdout.trim()).toBe("refused ECONNREFUSED");
    expect(seen.length).toBe(before);
  });

  it("refuses another host and path; another tenant's placeholder carries that tenant's value", async () => {
    const auth = { authorization: `Bearer ${placeholder}` };
    const before = seen.length;
    expect((await viaEgress("OPENAI/v1/x", { ...auth, "x-tollgate-host": "127.0.0.2:9" })).code).toBe("egress_host_refused");
    expect((await viaEgress("OPENAI/v2/x", auth)).code).toBe("egress_path_refused");
    expect(seen.length).toBe(before);
    const theirs = await new Hyperbrowser({ apiKey: dev.tenants.initech, baseUrl: gw }).sandboxes.create({ imageName: "node" });
    try {
      const ph = (await theirs.exec("printenv OPENAI")).stdout.trim();
      expect(ph).toMatch(/^tg_sec_/);
      expect((await viaEgress("OPENAI/v1/theirs", { authorization: `Bearer ${ph}` })).status).toBe(200);
      expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${OTHER_VALUE}`);
    } finally {
      await theirs.stop();
    }
  });

  it("refuses the placeholder after the sandbox stops, through the gateway or by its own timeout", async () => {
    const timed = await acme.sandboxes.create({ imageName: "node", timeoutMinutes: 0.15 });
    const timedPh = (await timed.exec("printenv OPENAI")).stdout.trim();
    expect((await viaEgress("OPENAI/v1/t", { authorization: `Bearer ${timedPh}` })).status).toBe(200);
    await sbx.stop();
    const stopped = await viaEgress("OPENAI/v1/x", { authorization: `Bearer ${placeholder}` });
    expect([stopped.status, stopped.code]).toEqual([403, "egress_sandbox_ended"]);
    let code: string | undefined;
    for (let i = 0; i < 80 && code !== "egress_sandbox_ended"; i++) {
      code = (await viaEgress("OPENAI/v1/t", { authorization: `Bearer ${timedPh}` })).code;
      if (code !== "egress_sandbox_ended") await sleep(250);
    }
    expect(code).toBe("egress_sandbox_ended");
  }, 60_000);
});
