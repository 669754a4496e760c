// Tenant secrets in sandboxes, through the unmodified SDK: processes, execs and terminals get only a placeholder
// (printenv, /proc/*/environ, files written from the env, the request log), and TOLLGATE_EGRESS; a request through the
// egress carrying the placeholder reaches a local test server with the real value in the secret's header, streamed
// (SSE); it is refused for another host, method or path, another secret's name, a placeholder the gateway never handed
// out, after the secret is deleted and after the sandbox stops; another tenant's placeholder carries that tenant's
// own value, never this one's.
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Hyperbrowser } from "@hyperbrowser/sdk";
import { gatewayCall, startSandboxStack, type SandboxStack } from "./sandboxes-harness.js";

type SandboxHandle = Awaited<ReturnType<Hyperbrowser["sandboxes"]["create"]>>;

const VALUE = `sk-alice-${randomBytes(16).toString("hex")}`;
const BOB_VALUE = `sk-bob-${randomBytes(16).toString("hex")}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let s: SandboxStack;
let server: Server;
let serverHost: string;
const seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders; body: string }> = [];
let sbx: SandboxHandle;
let placeholder: string;
let egress: string;

const key = (k: string) => ({ "x-api-key": k });
const put = (tenantKey: string, name: string, body: object) =>
  gatewayCall(s, "PUT", `/_tollgate/secrets/${name}`, { headers: key(tenantKey), body: JSON.stringify(body) });
/** A call to the egress as a process in the sandbox makes it (the gateway's public origin, the placeholder in a header). */
const viaEgress = (path: string, init: { method?: string; headers?: Record<string, string>; body?: string } = {}) =>
  gatewayCall(s, init.method ?? "GET", `/_tollgate/egress/${path}`, { headers: init.headers, body: init.body });

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (req.url === "/v1/stream") {
        res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
        res.write("data: one\n\n");
        setTimeout(() => {
          res.write("data: two\n\n");
          res.end();
        }, 300);
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ ok: true, path: req.url }));
    });
  });
  // On 127.0.0.2, standing for a host of its own on the internet: the gateway is reached at localhost (127.0.0.1), so the
  // floor can deny the secret's host to the sandbox without denying the gateway.
  await new Promise<void>((r) => server.listen(0, "127.0.0.2", r));
  serverHost = `127.0.0.2:${(server.address() as AddressInfo).port}`;
  s = await startSandboxStack({ egress: { allowHttpLoopback: true } });
  // The emulator's sandboxes reach the gateway as real ones reach the internet (emulator/sandboxes/outbound.ts).
  s.emu.internet.add(`localhost:${s.gw.port}`);
  // And so is the test server: what keeps a sandbox from it directly is the egress floor the gateway adds at creation.
  s.emu.internet.add(serverHost);
  expect((await put(s.keys.alice, "OPENAI", { value: VALUE, hosts: [serverHost], methods: ["GET", "POST"], paths: ["/v1/"] })).status).toBe(
    201,
  );
  expect((await put(s.keys.bob, "OPENAI", { value: BOB_VALUE, hosts: [serverHost] })).status).toBe(201);
  sbx = await s.alice.sandboxes.create({ imageName: "node" });
}, 120_000);

afterAll(async () => {
  await s?.close();
  await new Promise((r) => server?.close(r));
});

describe("placeholders in the sandbox", () => {
  it("an exec sees the placeholder and TOLLGATE_EGRESS, never the value", async () => {
    placeholder = (await sbx.exec("printenv OPENAI")).stdout.trim();
    expect(placeholder).toMatch(/^tg_sec_[A-Za-z0-9_-]{32}$/);
    egress = (await sbx.exec("printenv TOLLGATE_EGRESS")).stdout.trim();
    expect(egress).toBe(`${s.gatewayUrl}/_tollgate/egress`);
    // The same placeholder for every process of the sandbox.
    expect((await sbx.exec("printenv OPENAI")).stdout.trim()).toBe(placeholder);
  });

  it("a started process, its /proc/<pid>/environ and every process's, and a file written from the env hold only the placeholder", async () => {
    const proc = await sbx.processes.start("sleep 30");
    const environ = await sbx.exec(`sh -c 'cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n" | grep -a OPENAI'`);
    expect(environ.stdout).toContain(`OPENAI=${placeholder}`);
    expect(environ.stdout).not.toContain(VALUE);
    await sbx.exec("sh -c 'env > /home/ubuntu/env.txt'");
    const file = await sbx.files.readText("/home/ubuntu/env.txt");
    expect(file).toContain(`OPENAI=${placeholder}`);
    expect(file).not.toContain(VALUE);
    await proc.kill();
  });

  it("a terminal gets it too", async () => {
    const t = await sbx.terminal.create({ command: "bash", args: ["--norc", "--noprofile"], rows: 24, cols: 200 });
    const conn = await t.attach();
    let out = "";
    const closed = (async () => {
      for await (const e of conn.events()) if (e.type === "output") out += (e as unknown as { data: string }).data;
    })();
    await conn.write("echo [$OPENAI]\r");
    for (let i = 0; i < 60 && !out.includes(`[${placeholder}]`); i++) await sleep(50);
    expect(out).toContain(`[${placeholder}]`);
    await conn.close();
    await closed;
    await t.kill();
  });
});

describe("which sandboxes a secret reaches: by image or snapshot", () => {
  it("names the field in an error, and reaches only sandboxes created from a listed image or snapshot", async () => {
    const bad = await put(s.keys.alice, "NODEONLY", { value: VALUE, hosts: [serverHost], images: [] });
    expect([bad.status, bad.json.code]).toEqual([400, "invalid_body"]);
    expect(bad.text).toContain("images");
    const blank = await put(s.keys.alice, "NODEONLY", { value: VALUE, hosts: [serverHost], snapshots: ["node", " "] });
    expect(blank.status).toBe(400);
    expect(blank.text).toContain("snapshots.1");
    expect((await put(s.keys.alice, "NODEONLY", { value: VALUE, hosts: [serverHost], images: ["node"] })).status).toBe(201);
    expect((await put(s.keys.alice, "SNAPONLY", { value: VALUE, hosts: [serverHost], snapshots: ["agent-base"] })).status).toBe(201);
    const shown = await gatewayCall(s, "GET", "/_tollgate/secrets/NODEONLY", { headers: key(s.keys.alice) });
    expect(shown.json).toMatchObject({ name: "NODEONLY", images: ["node"] });
    const deb = await s.alice.sandboxes.create({ imageName: "debian" });
    const node = await s.alice.sandboxes.create({ imageName: "node" });
    try {
      const env = async (x: SandboxHandle) => (await x.exec("printenv")).stdout;
      const debEnv = await env(deb);
      expect(debEnv).toMatch(/^OPENAI=tg_sec_/m);
      expect(debEnv).not.toMatch(/^NODEONLY=/m);
      expect(debEnv).not.toMatch(/^SNAPONLY=/m);
      const nodeEnv = await env(node);
      expect(nodeEnv).toMatch(/^NODEONLY=tg_sec_/m);
      expect(nodeEnv).not.toMatch(/^SNAPONLY=/m);
      // A placeholder it never got cannot be made up: another sandbox's is bound to that sandbox only.
      const nodePh = /^NODEONLY=(\S+)$/m.exec(nodeEnv)![1]!;
      expect((await viaEgress("NODEONLY/v1/x", { headers: { authorization: `Bearer ${nodePh}` } })).status).toBe(200);
      // From a snapshot named in `snapshots`: that secret, not the image's.
      const snap = await node.createMemorySnapshot({ snapshotName: "agent-base" });
      expect(snap).toBeTruthy();
      const fromSnap = await s.alice.sandboxes.create({ snapshotName: "agent-base" });
      try {
        const snapEnv = await env(fromSnap);
        expect(snapEnv).toMatch(/^SNAPONLY=tg_sec_/m);
        expect(snapEnv).not.toMatch(/^NODEONLY=/m);
      } finally {
        await fromSnap.stop();
      }
    } finally {
      await deb.stop();
      await node.stop();
      for (const n of ["NODEONLY", "SNAPONLY"]) await gatewayCall(s, "DELETE", `/_tollgate/secrets/${n}`, { headers: key(s.keys.alice) });
    }
  }, 90_000);
});

describe("the egress", () => {
  it("swaps the placeholder for the value towards the secret's host", async () => {
    const res = await viaEgress("OPENAI/v1/models?limit=2", { headers: { authorization: `Bearer ${placeholder}` } });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ ok: true, path: "/v1/models?limit=2" });
    const got = seen.at(-1)!;
    expect(got.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(JSON.stringify(got.headers)).not.toContain(placeholder);
    expect(res.text).not.toContain(VALUE);
  });

  it("a process inside the sandbox reaches the test server through $TOLLGATE_EGRESS, carrying the real value", async () => {
    const script = `fetch(process.env.TOLLGATE_EGRESS + "/OPENAI/v1/inside", { headers: { authorization: "Bearer " + process.env.OPENAI } }).then(async (r) => console.log(r.status, await r.text()))`;
    const run = await sbx.exec(`node -e '${script}'`);
    expect(run.stdout.trim()).toBe('200 {"ok":true,"path":"/v1/inside"}');
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${VALUE}`);
    expect(run.stdout).not.toContain(VALUE);
  });

  it("the egress floor: the secret's host is denied to the sandbox directly, through a network update too", async () => {
    /** From inside a sandbox: a direct request to the test server, "refused <code>" or the answer's status and text. */
    const direct = `node -e 'const t = setTimeout(() => console.log("hung"), 10000); fetch("http://${serverHost}/v1/direct").then(async (r) => { clearTimeout(t); console.log(r.status, await r.text()); }, (e) => { clearTimeout(t); console.log("refused", e.cause?.code); })'`;
    // Control: a sandbox made at the emulator itself, with no floor, reaches the server directly.
    const bare = await fetch(`${s.emu.controlUrl}/api/sandbox`, {
      method: "POST",
      headers: { "x-api-key": s.emu.apiKey, "content-type": "application/json" },
      body: JSON.stringify({ imageName: "node" }),
    }).then((r) => r.json() as Promise<{ id: string }>);
    const before = seen.length;
    try {
      const { Hyperbrowser } = await import("@hyperbrowser/sdk");
      const emuSdk = new Hyperbrowser({ apiKey: s.emu.apiKey, baseUrl: s.emu.controlUrl });
      const bareSbx = await emuSdk.sandboxes.get(bare.id);
      expect((await bareSbx.exec(direct)).stdout.trim()).toBe('200 {"ok":true,"path":"/v1/direct"}');
      expect(seen.length).toBe(before + 1);
    } finally {
      await fetch(`${s.emu.controlUrl}/api/sandbox/${bare.id}/stop`, { method: "PUT", headers: { "x-api-key": s.emu.apiKey } });
    }
    // Through the gateway: the secret's host is in the sandbox's deny list; the egress still works.
    expect((await sbx.exec(direct)).stdout.trim()).toBe("refused ECONNREFUSED");
    // Clearing the network (the SDK sends {true, [], []}) keeps the floor; the client's own entries are kept beside it.
    // An entry is a host, never host:port (the upstream's rules): the whole host is denied.
    expect((await sbx.clearNetwork()).network.denyOut).toEqual(["127.0.0.2"]);
    expect((await sbx.updateNetwork({ denyOut: ["10.0.0.0/8"] })).network.denyOut).toEqual(["10.0.0.0/8", "127.0.0.2"]);
    expect((await sbx.exec(direct)).stdout.trim()).toBe("refused ECONNREFUSED");
    expect(seen.length).toBe(before + 1);
    const script = `fetch(process.env.TOLLGATE_EGRESS + "/OPENAI/v1/floor", { headers: { authorization: "Bearer " + process.env.OPENAI } }).then((r) => console.log(r.status))`;
    expect((await sbx.exec(`node -e '${script}'`)).stdout.trim()).toBe("200");
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${VALUE}`);
  });

  it("the egress floor of a live sandbox takes a secret's new host at once, not only at its next network update", async () => {
    // A host of its own (127.0.0.3), which none of alice's secrets names yet: her live sandbox reaches it directly.
    const other = createServer((_req, res) => res.end("direct"));
    await new Promise<void>((r) => other.listen(0, "127.0.0.3", r));
    const otherHost = `127.0.0.3:${(other.address() as AddressInfo).port}`;
    s.emu.internet.add(otherHost);
    const direct = `node -e 'const t = setTimeout(() => console.log("hung"), 10000); fetch("http://${otherHost}/").then(async (r) => { clearTimeout(t); console.log(r.status, await r.text()); }, (e) => { clearTimeout(t); console.log("refused", e.cause?.code); })'`;
    try {
      await sbx.updateNetwork({ denyOut: ["10.0.0.0/8"] });
      expect((await sbx.exec(direct)).stdout.trim()).toBe("200 direct");
      // A secret naming it: the gateway writes it into the floor of every live sandbox of the tenant, behind the answer.
      expect((await put(s.keys.alice, "GITHOST", { value: VALUE, hosts: [otherHost] })).status).toBe(201);
      let out = "";
      for (let i = 0; i < 40 && out !== "refused ECONNREFUSED"; i++) {
        out = (await sbx.exec(direct)).stdout.trim();
        if (out !== "refused ECONNREFUSED") await sleep(250);
      }
      expect(out).toBe("refused ECONNREFUSED");
      // The client's own entries are kept beside the floor.
      const detail = await (await fetch(`${s.emu.controlUrl}/api/sandbox/${sbx.id}`, { headers: { "x-api-key": s.emu.apiKey } })).json();
      expect(detail.network.denyOut).toEqual(expect.arrayContaining(["10.0.0.0/8", "127.0.0.2", "127.0.0.3"]));
    } finally {
      await gatewayCall(s, "DELETE", "/_tollgate/secrets/GITHOST", { headers: key(s.keys.alice) });
      await new Promise((r) => other.close(r));
    }
  });

  it("a sandbox whose egress list shuts the internet reaches nothing, the gateway included, and fails at once", async () => {
    const shut = await s.alice.sandboxes.create({ imageName: "node", allowInternetAccess: false } as never);
    const before = seen.length;
    // The connection is refused as a network policy rejecting it would (nothing listens for a refused destination
    // inside): the fetch fails at once with an error, never a socket that neither answers nor fails (the 10 s timer
    // would say "hung").
    const script = `const t0 = Date.now(); const t = setTimeout(() => console.log("hung"), 10000); fetch(process.env.TOLLGATE_EGRESS + "/OPENAI/v1/inside").then((r) => { clearTimeout(t); console.log(r.status); }, (e) => { clearTimeout(t); console.log("refused", e.cause?.code, Date.now() - t0); })`;
    const [word, code, ms] = (await shut.exec(`node -e '${script}'`)).stdout.trim().split(" ");
    expect([word, code]).toEqual(["refused", "ECONNREFUSED"]);
    expect(Number(ms)).toBeLessThan(1_000);
    expect(seen.length).toBe(before);
    await shut.stop();
  });

  it("streams an answer as it comes (SSE) and a body both ways", async () => {
    const started = Date.now();
    const res = await fetch(`http://127.0.0.1:${s.gw.port}/_tollgate/egress/OPENAI/v1/stream`, {
      headers: { authorization: `Bearer ${placeholder}`, host: `localhost:${s.gw.port}` },
    });
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    const reader = res.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).toContain("data: one");
    expect(Date.now() - started).toBeLessThan(300 + 2_000);
    let restText = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      restText += new TextDecoder().decode(value);
    }
    expect(restText).toContain("data: two");
    const posted = await viaEgress("OPENAI/v1/chat", {
      method: "POST",
      headers: { authorization: `Bearer ${placeholder}` },
      body: '{"q":1}',
    });
    expect(posted.status).toBe(200);
    expect(seen.at(-1)).toMatchObject({ method: "POST", body: '{"q":1}' });
  });

  it("refuses another host, method or path, another secret's name and a placeholder it never handed out", async () => {
    const auth = { authorization: `Bearer ${placeholder}` };
    const before = seen.length;
    const cases: Array<[string, { method?: string; headers: Record<string, string> }, number, string]> = [
      ["OPENAI/v1/models", { headers: { ...auth, "x-tollgate-host": "127.0.0.2:9" } }, 403, "egress_host_refused"],
      ["OPENAI/v1/models", { method: "DELETE", headers: auth }, 403, "egress_method_refused"],
      ["OPENAI/v2/models", { headers: auth }, 403, "egress_path_refused"],
      ["GITHUB/v1/models", { headers: auth }, 403, "egress_refused"],
      ["OPENAI/v1/models", { headers: { authorization: `Bearer tg_sec_${"A".repeat(32)}` } }, 403, "egress_refused"],
      ["OPENAI/v1/models", { headers: {} }, 401, "egress_placeholder_missing"],
      ["OPENAI/v1/models", { headers: { authorization: `Bearer ${VALUE}` } }, 401, "egress_placeholder_missing"],
    ];
    for (const [path, init, status, code] of cases) {
      const res = await viaEgress(path, init);
      expect([path, res.status, res.json?.code]).toEqual([path, status, code]);
    }
    expect(seen.length).toBe(before);
  });

  it("another tenant's placeholder carries that tenant's value, never this one's", async () => {
    const theirs = await s.bob.sandboxes.create({ imageName: "node" });
    const bobPlaceholder = (await theirs.exec("printenv OPENAI")).stdout.trim();
    expect(bobPlaceholder).toMatch(/^tg_sec_/);
    expect(bobPlaceholder).not.toBe(placeholder);
    const res = await viaEgress("OPENAI/v1/models", { headers: { authorization: `Bearer ${bobPlaceholder}` } });
    expect(res.status).toBe(200);
    expect(seen.at(-1)!.headers.authorization).toBe(`Bearer ${BOB_VALUE}`);
    await theirs.stop();
  });

  it("keeps the egress in the tenant's request log, without the value or the placeholder", async () => {
    const log = await gatewayCall(s, "GET", "/_tollgate/requests?limit=50", { headers: key(s.keys.alice) });
    expect(log.status).toBe(200);
    expect(log.text).toContain("/_tollgate/egress/OPENAI/v1/models");
    expect(log.text).not.toContain(VALUE);
    expect(log.text).not.toContain(placeholder);
    const secret = await gatewayCall(s, "GET", "/_tollgate/secrets/OPENAI", { headers: key(s.keys.alice) });
    expect(secret.json.lastUsedAt).not.toBeNull();
  });

  it("refuses the placeholder of a sandbox that ended unseen: its own timeout, or stopped at the upstream", async () => {
    const auth = (p: string) => ({ authorization: `Bearer ${p}` });
    // Ends by itself after 9 s (the emulator enforces timeoutMinutes); the gateway sees nothing of it.
    const timed = await s.alice.sandboxes.create({ imageName: "node", timeoutMinutes: 0.15 });
    const timedPh = (await timed.exec("printenv OPENAI")).stdout.trim();
    expect((await viaEgress("OPENAI/v1/models", { headers: auth(timedPh) })).status).toBe(200);
    const other = await s.alice.sandboxes.create({ imageName: "node" });
    const otherPh = (await other.exec("printenv OPENAI")).stdout.trim();
    expect((await viaEgress("OPENAI/v1/models", { headers: auth(otherPh) })).status).toBe(200);
    // Stopped at the upstream directly, with its own key (as its console or another tool would).
    const stopped = await fetch(`${s.emu.controlUrl}/api/sandbox/${other.id}/stop`, {
      method: "PUT",
      headers: { "x-api-key": s.emu.apiKey },
    });
    expect(stopped.status).toBe(200);
    const before = seen.length;
    for (let i = 0; i < 60; i++) {
      const res = await viaEgress("OPENAI/v1/models", { headers: auth(timedPh) });
      if (res.json?.code === "egress_sandbox_ended") break;
      await sleep(250);
    }
    // Within the status's 2 s reuse, both are refused; at most the requests made before the ends reached the server.
    await sleep(2_100);
    for (const p of [timedPh, otherPh]) {
      const res = await viaEgress("OPENAI/v1/models", { headers: auth(p) });
      expect([res.status, res.json?.code]).toEqual([403, "egress_sandbox_ended"]);
    }
    const after = seen.length;
    expect((await viaEgress("OPENAI/v1/models", { headers: auth(otherPh) })).json?.code).toBe("egress_sandbox_ended");
    expect(seen.length).toBe(after);
    expect(after - before).toBeLessThanOrEqual(60);
  }, 60_000);

  it("refuses the placeholder once the secret is deleted, and once the sandbox stops", async () => {
    const other = await s.alice.sandboxes.create({ imageName: "node" });
    expect((await put(s.keys.alice, "GITHUB", { value: VALUE, hosts: [serverHost] })).status).toBe(201);
    const gh = (await other.exec("printenv GITHUB")).stdout.trim();
    expect((await viaEgress("GITHUB/x", { headers: { authorization: `token ${gh}` } })).status).toBe(200);
    expect((await gatewayCall(s, "DELETE", "/_tollgate/secrets/GITHUB", { headers: key(s.keys.alice) })).status).toBe(200);
    expect((await viaEgress("GITHUB/x", { headers: { authorization: `token ${gh}` } })).json.code).toBe("egress_refused");
    await other.stop();
    await sbx.stop();
    const res = await viaEgress("OPENAI/v1/models", { headers: { authorization: `Bearer ${placeholder}` } });
    expect([res.status, res.json.code]).toEqual([403, "egress_sandbox_ended"]);
  });

  it("never let the value out: not to a client, not to a log line", async () => {
    expect(s.clientBytes()).not.toContain(VALUE);
    expect(s.clientBytes()).not.toContain(BOB_VALUE);
    for (const l of s.logs) {
      expect(l).not.toContain(VALUE);
      expect(l).not.toContain(BOB_VALUE);
    }
  });
});
