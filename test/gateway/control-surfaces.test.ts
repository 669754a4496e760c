// Profiles, extensions, volumes, session operations, images and team info through the gateway with the unmodified
// SDK: what a tenant creates is its own (another tenant gets 404 and does not see it listed), the operator's catalog
// and credit balance need the admin scope, and no answer carries the upstream's address.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import { writeZip } from "../../emulator/sessions/zip-writer.js";
import { startSessionGateway, type SessionGateway } from "../helpers/session-gateway.js";
import { statusOf } from "../helpers/sdk-status.js";

let stack: SessionGateway;
let acme: Hyperbrowser;
let initech: Hyperbrowser;
let ops: Hyperbrowser;
let work: string;
const ALL = ["search", "sessions", "sandboxes", "jobs", "agents"];

beforeAll(async () => {
  stack = await startSessionGateway(
    [
      { id: "acme", scopes: ALL },
      { id: "initech", scopes: ALL },
      { id: "ops", scopes: [...ALL, "admin"] },
    ],
    { modules: ["sessions", "sandboxes"] },
  );
  const baseUrl = stack.gateway.url;
  acme = new Hyperbrowser({ apiKey: stack.keys.acme!, baseUrl });
  initech = new Hyperbrowser({ apiKey: stack.keys.initech!, baseUrl });
  ops = new Hyperbrowser({ apiKey: stack.keys.ops!, baseUrl });
  work = mkdtempSync(join(tmpdir(), "control-surfaces-"));
});
afterAll(async () => {
  for (const line of stack?.logs ?? []) expect(line.includes(stack.emulator.apiKey), "a log line carries the upstream API key").toBe(false);
  await stack?.close();
  rmSync(work, { recursive: true, force: true });
});

/** Fails if an answer names the upstream's control or runtime address, or its API key. */
function assertClean(answer: unknown) {
  const text = JSON.stringify(answer);
  for (const secret of [new URL(stack.emulator.controlUrl).host, new URL(stack.emulator.runtimeUrl).host, stack.emulator.apiKey])
    expect(text.includes(secret), `answer names ${secret}`).toBe(false);
}

describe("profiles", () => {
  it("are the creating tenant's: get, fork and delete work for it, 404 for another, lists filtered", async () => {
    const p = await acme.profiles.create({ name: "acme-profile" });
    expect((await acme.profiles.get(p.id)).id).toBe(p.id);
    const fork = await acme.profiles.fork(p.id, { name: "forked" } as never);
    expect(fork.id).not.toBe(p.id);
    expect(await statusOf(initech.profiles.get(p.id))).toBe(404);
    expect(await statusOf(initech.profiles.fork(p.id))).toBe(404);
    expect(await statusOf(initech.profiles.delete(p.id))).toBe(404);
    const mine = await acme.profiles.list();
    expect(mine.profiles.map((x) => x.id).sort()).toEqual([p.id, fork.id].sort());
    expect(mine.totalCount).toBe(2);
    const theirs = await initech.profiles.list();
    expect(theirs.profiles.map((x) => x.id)).not.toContain(p.id);
    await acme.profiles.delete(fork.id);
    expect(await statusOf(acme.profiles.get(fork.id))).toBe(404);
  });
});

describe("extensions", () => {
  it("are the uploading tenant's: listed for it only", async () => {
    const dir = join(work, "ext");
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "manifest.json"), JSON.stringify({ manifest_version: 3, name: "Hello", version: "1.0" }));
    const zipPath = join(work, "hello.zip");
    await writeZip(dir, zipPath);
    const ext = await acme.extensions.create({ filePath: zipPath, name: "acme-ext" });
    // The emulator answers the current `{extensions: […]}` (the Node SDK's type still says a bare array).
    const ids = async (hb: Hyperbrowser) =>
      ((await hb.extensions.list()) as unknown as { extensions: Array<{ id: string }> }).extensions.map((e) => e.id);
    expect(await ids(acme)).toContain(ext.id);
    expect(await ids(initech)).not.toContain(ext.id);
  });
});

describe("volumes", () => {
  it("are the creating tenant's, by id and by name", async () => {
    const v = await acme.volumes.create({ name: `acme-vol-${Date.now()}` });
    expect((await acme.volumes.get(v.id)).id).toBe(v.id);
    expect(await statusOf(initech.volumes.get(v.id))).toBe(404);
    expect(await statusOf(initech.volumes.delete(v.id))).toBe(404);
    expect(await statusOf(initech.volumes.delete(v.name))).toBe(404);
    expect((await acme.volumes.list()).volumes.map((x) => x.id)).toEqual([v.id]);
    expect((await initech.volumes.list()).volumes).toEqual([]);
    expect((await acme.volumes.delete(v.name)).deleted).toBe(true);
  });
});

describe("session operations", () => {
  it("work for the owner and answer 404 to another tenant, with no upstream address in any answer", async () => {
    const s = await acme.sessions.create({ saveDownloads: true, timeoutMinutes: 5 });
    try {
      const up = await acme.sessions.uploadFile(s.id, { fileInput: Buffer.from("hello"), fileName: "hello.txt" });
      assertClean(up);
      const logs = await acme.sessions.eventLogs.list(s.id);
      assertClean(logs);
      expect((await acme.sessions.extendSession(s.id, 5)).success).toBe(true);
      expect((await acme.sessions.updateScreenSize(s.id, { width: 800, height: 600 } as never)).success).toBe(true);
      assertClean(await acme.sessions.getRecordingURL(s.id));
      for (const attempt of [
        initech.sessions.uploadFile(s.id, { fileInput: Buffer.from("x"), fileName: "x.txt" }),
        initech.sessions.eventLogs.list(s.id),
        initech.sessions.extendSession(s.id, 5),
        initech.sessions.updateScreenSize(s.id, { width: 800, height: 600 } as never),
        initech.sessions.getRecordingURL(s.id),
        initech.sessions.getVideoRecordingURL(s.id),
        initech.sessions.getDownloadsURL(s.id),
        initech.sessions.getRecording(s.id),
      ]) {
        expect(await statusOf(attempt)).toBe(404);
      }
    } finally {
      await acme.sessions.stop(s.id);
    }
    // The downloads zip is signed on the upstream's host: the tenant gets a gateway link it can fetch without a key.
    let link: { downloadsUrl?: string | null; status?: string } = {};
    for (let i = 0; i < 20 && link.status !== "completed"; i++) {
      link = await acme.sessions.getDownloadsURL(s.id);
      if (link.status !== "completed") await new Promise((r) => setTimeout(r, 250));
    }
    assertClean(link);
    expect(link.downloadsUrl?.startsWith(`${stack.gateway.url}/_tollgate/session-files/${s.id}?ticket=`)).toBe(true);
    const zip = await fetch(link.downloadsUrl!);
    expect(zip.status).toBe(200);
    expect((await zip.arrayBuffer()).byteLength).toBeGreaterThan(0);
    expect((await fetch(link.downloadsUrl!.replace("ticket=", "ticket=x"))).status).toBe(401);
  }, 120_000);
});

describe("the operator's catalog and balance", () => {
  it("lets any sandbox tenant read images, and only admins change them or read the team's credits", async () => {
    expect((await acme.sandboxes.listImages()).images.length).toBeGreaterThan(0);
    expect(await statusOf(acme.sandboxes.deleteImage("node"))).toBe(403);
    expect(await statusOf(acme.team.getCreditInfo())).toBe(403);
    expect(await statusOf(ops.team.getCreditInfo())).toBe(200);
    expect(await statusOf(acme.sandboxes.listImageBuilds())).toBe(403);
    expect(await statusOf(ops.sandboxes.listImageBuilds())).toBe(200);
  });
});
