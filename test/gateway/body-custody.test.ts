// Custody inside request bodies, through the gateway against the emulator, with two tenants (initech knows acme's ids,
// as an id can leak through logs, screenshots or a shared link): every body field that names a resource is refused for
// another tenant's id (the same 404 as in a path, nothing forwarded) and accepted for the caller's own; names are not
// ids; undeclared fields and counts out of range are refused; method overrides never reach the upstream.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { writeZip } from "../../emulator/sessions/zip-writer.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { statusOf } from "../helpers/sdk-status.js";

const ALL = ["search", "sessions", "sandboxes", "jobs", "agents"];
const SITE = "http://web.emulator.test";

let stack: SessionGateway;
let acme: Hyperbrowser;
let initech: Hyperbrowser;
let work: string;
const a = {} as { volume: { id: string; name: string }; profile: string; extension: string; session: string; snapshot: string };

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      { id: "acme", scopes: ALL },
      { id: "initech", scopes: ALL },
      { id: "ops", scopes: [...ALL, "admin"] },
    ],
    { modules: ["sessions", "sandboxes", "jobs"], record: true },
  );
  acme = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl: stack.gateway.url });
  initech = new Hyperbrowser({ apiKey: stack.keys.initech!, baseUrl: stack.gateway.url });
  work = mkdtempSync(join(tmpdir(), "body-custody-"));
  const dir = join(work, "ext");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "manifest.json"), JSON.stringify({ manifest_version: 3, name: "Hello", version: "1.0" }));
  await writeZip(dir, join(work, "ext.zip"));
  const volume = await acme.volumes.create({ name: "shared-name" });
  a.volume = { id: volume.id, name: volume.name };
  a.profile = (await acme.profiles.create()).id;
  a.extension = (await acme.extensions.create({ filePath: join(work, "ext.zip"), name: "acme-ext" })).id;
  a.session = (await acme.sessions.create()).id;
  a.snapshot = (await acme.sessions.createSnapshot(a.session)).snapshotId;
}, 180_000);
afterAll(async () => {
  await stack?.close();
  rmSync(work, { recursive: true, force: true });
});

const post = (key: string, path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${stack.gateway.url}${path}`, {
    method: "POST",
    headers: { "x-api-key": key, "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });

/** How many requests the emulator has received for `method path` (query ignored). */
const received = (method: string, path: string) =>
  stack.emulator.received.filter((r) => r.method === method && new URL(r.url).pathname === path).length;

describe("a body naming another tenant's resource", () => {
  const cases: Array<[string, string, () => unknown, string]> = [
    [
      "a sandbox mounting its volume",
      "/api/sandbox",
      () => ({ imageName: "node", mounts: { "/mnt/x": { id: a.volume.id } } }),
      "mounts./mnt/x.id",
    ],
    ["a sandbox from its snapshot", "/api/sandbox", () => ({ snapshotName: "any", snapshotId: a.snapshot }), "snapshotId"],
    ["a session with its profile", "/api/session", () => ({ profile: { id: a.profile } }), "profile.id"],
    ["a session with its extension", "/api/session", () => ({ extensionIds: [a.extension] }), "extensionIds.0"],
    [
      "a session from its snapshot",
      "/api/session",
      () => ({ startFromSnapshot: { snapshotId: a.snapshot } }),
      "startFromSnapshot.snapshotId",
    ],
    [
      "a scrape whose session uses its profile",
      "/api/scrape",
      () => ({ url: `${SITE}/about`, sessionOptions: { profile: { id: a.profile } } }),
      "sessionOptions.profile.id",
    ],
    [
      "a crawl whose session loads its extension",
      "/api/crawl",
      () => ({ url: `${SITE}/`, sessionOptions: { extensionIds: [a.extension] } }),
      "sessionOptions.extensionIds.0",
    ],
    ["an agent task driving its live session", "/api/task/browser-use", () => ({ task: "look", sessionId: a.session }), "sessionId"],
    [
      "a web fetch in its profile",
      "/api/web/fetch",
      () => ({ url: `${SITE}/about`, browser: { profileId: a.profile } }),
      "browser.profileId",
    ],
  ];

  it.each(cases)("is refused: %s → 404 naming the field, nothing forwarded", async (_what, path, body, field) => {
    const before = received("POST", path);
    const r = await post(stack.keys.initech!, path, body());
    expect(r.status).toBe(404);
    expect(await r.json()).toMatchObject({ code: "not_found", field });
    expect(received("POST", path)).toBe(before);
  });

  it("is refused through the unmodified SDK too", async () => {
    expect(await statusOf(initech.sessions.create({ profile: { id: a.profile } }))).toBe(404);
    expect(await statusOf(initech.sessions.create({ extensionIds: [a.extension] }))).toBe(404);
    expect(await statusOf(initech.sandboxes.create({ imageName: "node", mounts: { "/mnt/x": { id: a.volume.id } } }))).toBe(404);
    expect(await statusOf(initech.agents.browserUse.start({ task: "look", sessionId: a.session }))).toBe(404);
    expect(await statusOf(initech.scrape.start({ url: `${SITE}/about`, sessionOptions: { profile: { id: a.profile } } }))).toBe(404);
  });
});

describe("a body naming the caller's own resources", () => {
  it("is accepted: a session with its own profile, extension and snapshot", async () => {
    const s = await acme.sessions.create({ profile: { id: a.profile }, extensionIds: [a.extension] });
    expect(s.status).toBe("active");
    await acme.sessions.stop(s.id);
    const fromSnapshot = await acme.sessions.create({ startFromSnapshot: { snapshotId: a.snapshot } });
    expect(fromSnapshot.status).toBe("active");
    await acme.sessions.stop(fromSnapshot.id);
  });

  it("is accepted: a sandbox mounting its own volume reads and writes it", async () => {
    const sbx = await acme.sandboxes.create({ imageName: "node", mounts: { "/mnt/data": { id: a.volume.id } } });
    try {
      await sbx.files.writeText("/mnt/data/hello.txt", "mine");
      expect((await sbx.exec("cat /mnt/data/hello.txt")).stdout).toContain("mine");
    } finally {
      await sbx.stop();
    }
  });
});

describe("names are not ids", () => {
  it("a volume named after another tenant's volume id is a new volume of the caller's; the owner keeps its own", async () => {
    const r = await post(stack.keys.initech!, "/api/volume", { name: a.volume.id });
    expect(r.status).toBe(200);
    const mine = await r.json();
    expect(mine.id).not.toBe(a.volume.id);
    expect(mine.name).toBe(a.volume.id);
    expect((await acme.volumes.get(a.volume.id)).id).toBe(a.volume.id);
    expect(await statusOf(initech.volumes.get(a.volume.id))).toBe(404);
    // Deleting by that name deletes initech's own volume of that name, never acme's.
    expect(await initech.volumes.delete(a.volume.id)).toMatchObject({ deleted: true, id: mine.id });
    expect(await statusOf(initech.volumes.delete(a.volume.id))).toBe(404);
    expect((await acme.volumes.get(a.volume.id)).id).toBe(a.volume.id);
    expect((await acme.volumes.list()).volumes.map((v) => v.id)).toContain(a.volume.id);
  });

  it("two tenants use the same name without seeing each other's, and see their own name back", async () => {
    const theirs = await initech.volumes.create({ name: "shared-name" });
    expect(theirs.id).not.toBe(a.volume.id);
    expect(theirs.name).toBe("shared-name");
    expect((await initech.volumes.get(theirs.id)).name).toBe("shared-name");
    expect((await initech.volumes.list()).volumes.map((v) => [v.id, v.name])).toEqual([[theirs.id, "shared-name"]]);
    expect((await acme.volumes.list()).volumes.find((v) => v.id === a.volume.id)?.name).toBe("shared-name");
    expect(await initech.volumes.delete("shared-name")).toMatchObject({ deleted: true, id: theirs.id, name: "shared-name" });
    expect((await acme.volumes.get(a.volume.id)).name).toBe("shared-name");
  });
});

describe("deny by default on body fields", () => {
  it.each([
    ["/api/session", { bogus: 1 }, "bogus"],
    ["/api/session", { profile: { id: "x", sneaky: true } }, "profile.sneaky"],
    ["/api/sandbox", { imageName: "node", mounts: { "/m": { id: "v", extra: 1 } } }, "mounts./m.extra"],
    ["/api/task/browser-use", { task: "t", sessionOptions: { notAnOption: true } }, "sessionOptions.notAnOption"],
  ])("refuses an undeclared field on %s with 400 unknown_field naming its path, nothing forwarded", async (path, body, field) => {
    const before = received("POST", path);
    const r = await post(stack.keys.acme!, path, body);
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ code: "unknown_field", field });
    expect(received("POST", path)).toBe(before);
  });

  it.each([
    ["/api/crawl", "maxPages", 0],
    ["/api/crawl", "maxPages", -1],
    ["/api/crawl", "maxPages", 0.5],
    ["/api/crawl", "maxPages", "1000"],
    ["/api/task/browser-use", "maxSteps", 0],
    ["/api/task/browser-use", "maxSteps", "1000"],
    ["/api/extract", "maxLinks", 1.5],
  ])("refuses %s with %s = %j: 400 invalid_params naming the field, nothing forwarded", async (path, field, value) => {
    const base = path === "/api/extract" ? { urls: [`${SITE}/`] } : path === "/api/crawl" ? { url: `${SITE}/` } : { task: "t" };
    const before = received("POST", path);
    const r = await post(stack.keys.acme!, path, { ...base, [field]: value });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ code: "invalid_params", field });
    expect(received("POST", path)).toBe(before);
  });
});

describe("method overrides", () => {
  it("never reach the upstream: the override headers are dropped", async () => {
    const before = stack.emulator.received.length;
    const r = await post(
      stack.keys.acme!,
      "/api/profile",
      {},
      {
        "x-http-method-override": "DELETE",
        "x-method-override": "DELETE",
        "x-http-method": "DELETE",
      },
    );
    expect(r.status).toBe(200);
    const sent = stack.emulator.received.slice(before).filter((x) => new URL(x.url).pathname === "/api/profile");
    expect(sent).toHaveLength(1);
    expect(sent[0]!.method).toBe("POST");
    for (const h of ["x-http-method-override", "x-method-override", "x-http-method"]) expect(sent[0]!.headers[h]).toBeUndefined();
  });

  it("?_method= is refused with 400 method_override_refused, nothing forwarded", async () => {
    const before = received("GET", `/api/profile/${a.profile}`) + received("DELETE", `/api/profile/${a.profile}`);
    const r = await fetch(`${stack.gateway.url}/api/profile/${a.profile}?_method=DELETE`, { headers: { "x-api-key": stack.keys.acme! } });
    expect(r.status).toBe(400);
    expect(await r.json()).toMatchObject({ code: "method_override_refused" });
    expect(received("GET", `/api/profile/${a.profile}`) + received("DELETE", `/api/profile/${a.profile}`)).toBe(before);
    expect((await acme.profiles.get(a.profile)).id).toBe(a.profile);
  });
});

describe("a gateway token in ?token=", () => {
  it("is not accepted on plain HTTP runtime calls, and never forwarded", async () => {
    const sbx = await acme.sandboxes.create({ imageName: "node" });
    try {
      const detail = await (
        await fetch(`${stack.gateway.url}/api/sandbox/${sbx.id}`, { headers: { "x-api-key": stack.keys.acme! } })
      ).json();
      const token = detail.token as string;
      const base = `${stack.gateway.url}/sandbox/${sbx.id}/files?path=/tmp`;
      const plain = await fetch(`${base}&token=${encodeURIComponent(token)}`);
      expect(plain.status).toBe(401);
      const before = stack.emulator.received.length;
      const ok = await fetch(`${base}&token=${encodeURIComponent(token)}`, { headers: { authorization: `Bearer ${token}` } });
      expect(ok.status).toBe(200);
      const sent = stack.emulator.received.slice(before).filter((x) => new URL(x.url).pathname.endsWith("/files"));
      expect(sent.length).toBeGreaterThan(0);
      for (const x of sent) expect(new URL(x.url).searchParams.has("token")).toBe(false);
    } finally {
      await sbx.stop();
    }
  });
});

describe("a tenant's session list", () => {
  it("costs upstream calls that grow with the page, not with the account (≤ page size + 1), and lists only its own", async () => {
    const others = await Promise.all([initech.sessions.create(), initech.sessions.create()]);
    try {
      const before = stack.emulator.received.length;
      const mine = await acme.sessions.list({ limit: 2 });
      const calls = stack.emulator.received.slice(before).filter((r) => /^\/api\/sessions?(\/|$)/.test(new URL(r.url).pathname));
      expect(calls.length).toBeLessThanOrEqual(3);
      expect(mine.sessions.map((s) => s.id)).not.toEqual(expect.arrayContaining([others[0]!.id]));
      expect(mine.sessions.length).toBeLessThanOrEqual(2);
      expect(mine.totalCount).toBeGreaterThanOrEqual(mine.sessions.length);
      for (const s of mine.sessions) expect(JSON.stringify(s)).not.toContain(new URL(stack.emulator.controlUrl).host);
      const active = await acme.sessions.list({ status: "active" });
      expect(active.sessions.map((s) => s.id)).toContain(a.session);
      expect(active.sessions.every((s) => s.status === "active")).toBe(true);
    } finally {
      for (const s of others) await initech.sessions.stop(s.id);
    }
  });
});
