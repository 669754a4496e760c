// Control plane of the sandbox emulator, driven through the unmodified SDK (and raw calls for status codes).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { request } from "undici";
import { control, isAlive, startSandboxHarness, type SandboxHarness } from "./sandboxes-harness.js";

let h: SandboxHarness;
beforeAll(async () => {
  h = await startSandboxHarness();
});
afterAll(async () => h?.close());

describe("sandbox control plane", () => {
  it("lists the base images, with a node image", async () => {
    const res = await h.hb.sandboxes.listImages();
    expect(res.images.map((i) => i.imageName)).toEqual(expect.arrayContaining(["node", "debian"]));
    expect(res.totalCount).toBe(res.images.length);
  });

  it("creates an active sandbox with a runtime target, token and expiry as the SDK expects", async () => {
    const sbx = await h.hb.sandboxes.create({ imageName: "node", timeoutMinutes: 10 });
    const detail = sbx.toJSON();
    expect(detail.status).toBe("active");
    const runtimeHost = h.emu.runtimeUrl.replace("127.0.0.1", "localhost");
    expect(detail.runtime).toEqual({ transport: "regional_proxy", host: runtimeHost, baseUrl: `${runtimeHost}/sandbox/${sbx.id}` });
    expect(detail.token).toMatch(/^ey/);
    expect(Date.parse(detail.tokenExpiresAt!)).toBeGreaterThan(Date.now());
    expect(detail.timeoutMinutes).toBe(10);
    const again = await control(h.emu, "GET", `/api/sandbox/${sbx.id}`);
    expect(again.status).toBe(200);
    expect(again.json.token).not.toBe(detail.token); // fresh token each time
    await sbx.stop();
  });

  it("refuses calls without the API key, and accepts it as a Bearer token", async () => {
    const none = await request(`${h.emu.controlUrl}/api/images`);
    expect(none.statusCode).toBe(401);
    expect(await none.body.json()).toMatchObject({ code: "unauthorized" });
    const bearer = await request(`${h.emu.controlUrl}/api/images`, { headers: { authorization: `Bearer ${h.emu.apiKey}` } });
    expect(bearer.statusCode).toBe(200);
    await bearer.body.dump();
  });

  it("answers unknown ids, images and pins with 404 not found", async () => {
    const r = await control(h.emu, "GET", "/api/sandbox/sbx_nope");
    expect(r.status).toBe(404);
    expect(r.json.message).toMatch(/not found/);
    expect(r.json.code).toBe("not_found");
    expect((await control(h.emu, "POST", "/api/sandbox", { imageName: "nope" })).status).toBe(404);
    const pinned = await control(h.emu, "POST", "/api/sandbox", { imageName: "node", imageId: "img_other" });
    expect(pinned.status).toBe(404);
    expect(pinned.json.message).toMatch(/not found/);
    expect((await control(h.emu, "POST", "/api/sandbox", {})).status).toBe(400);
  });

  it("reads a stopped sandbox back as 200 with token null, and the SDK then refuses runtime calls locally", async () => {
    const sbx = await h.hb.sandboxes.create({ imageName: "debian" });
    expect(await sbx.stop()).toEqual({ success: true });
    const r = await control(h.emu, "GET", `/api/sandbox/${sbx.id}`);
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ status: "closed", token: null, tokenExpiresAt: null });
    await expect(h.hb.sandboxes.connect(sbx.id)).rejects.toMatchObject({ statusCode: 409, code: "sandbox_not_running" });
    const snap = await control(h.emu, "POST", `/api/sandbox/${sbx.id}/snapshot`, {});
    expect(snap.status).toBe(409);
    expect(snap.json.message).toBe("Sandbox is not running");
  });

  it("lists sandboxes with status and search filters and paging", async () => {
    const a = await h.hb.sandboxes.create({ imageName: "node" });
    const b = await h.hb.sandboxes.create({ imageName: "node" });
    await b.stop();
    const active = await h.hb.sandboxes.list({ status: "active", limit: 50 });
    expect(active.sandboxes.map((s) => s.id)).toContain(a.id);
    expect(active.sandboxes.every((s) => s.status === "active")).toBe(true);
    expect((active.sandboxes[0] as any).token).toBeUndefined();
    const page = await h.hb.sandboxes.list({ limit: 1, page: 2 });
    expect(page).toMatchObject({ page: 2, perPage: 1 });
    expect(page.sandboxes).toHaveLength(1);
    expect(page.totalCount).toBeGreaterThanOrEqual(2);
    const search = await h.hb.sandboxes.list({ search: b.id });
    expect(search.sandboxes.map((s) => s.id)).toEqual([b.id]);
    await a.stop();
  });

  it("takes a memory snapshot that preserves the filesystem, and starts new sandboxes from it", async () => {
    const sbx = await h.hb.sandboxes.create({ imageName: "node" });
    await sbx.files.writeText("/home/ubuntu/state.txt", "kept");
    await sbx.exec("mkdir -p /tmp/deep && echo tmp > /tmp/deep/x");
    const snap = await sbx.createMemorySnapshot({ snapshotName: "ctl-snap" });
    expect(snap).toMatchObject({ snapshotName: "ctl-snap", status: "created", imageName: "node" });
    expect((await h.hb.sandboxes.getSnapshot("ctl-snap")).id).toBe(snap.snapshotId);
    const listed = await h.hb.sandboxes.listSnapshots({ status: "created" });
    expect(listed.snapshots.map((s) => s.id)).toContain(snap.snapshotId);
    const clone = await h.hb.sandboxes.create({ snapshotName: "ctl-snap", snapshotId: snap.snapshotId });
    expect(await clone.files.readText("/home/ubuntu/state.txt")).toBe("kept");
    expect((await clone.exec("cat /tmp/deep/x")).stdout).toBe("tmp\n");
    const wrongPin = await control(h.emu, "POST", "/api/sandbox", { snapshotName: "ctl-snap", snapshotId: "snap_other" });
    expect(wrongPin.status).toBe(404);
    expect((await control(h.emu, "GET", "/api/snapshots/nope")).status).toBe(404);
    await Promise.all([sbx.stop(), clone.stop()]);
  });

  it("exposes and unexposes ports, refusing the reserved runtime port 4001", async () => {
    const sbx = await h.hb.sandboxes.create({ imageName: "node", exposedPorts: [{ port: 8080 }] });
    expect(sbx.exposedPorts.map((p) => p.port)).toEqual([8080]);
    const reserved = await control(h.emu, "POST", `/api/sandbox/${sbx.id}/expose`, { port: 4001 });
    expect(reserved.status).toBe(400);
    expect(reserved.json.message).toMatch(/cannot be exposed/);
    const pub = await sbx.expose({ port: 3000 });
    expect(pub).toEqual({ port: 3000, auth: false, url: sbx.getExposedUrl(3000), browserUrl: sbx.getExposedUrl(3000) });
    const priv = await sbx.expose({ port: 3001, auth: true });
    expect(priv.url).toBe(sbx.getExposedUrl(3001));
    expect(priv.browserUrl).toContain(`${priv.url}_hb/auth?grant=`);
    expect(priv.browserUrl).toMatch(/&next=%2F$/);
    expect(Date.parse(priv.browserUrlExpiresAt!)).toBeGreaterThan(Date.now());
    expect(await sbx.unexpose(3000)).toEqual({ port: 3000, exposed: false });
    expect((await sbx.info()).exposedPorts.map((p) => p.port)).toEqual([3001, 8080]);
    await sbx.stop();
  });

  it("stores network policy updates and clears them", async () => {
    const sbx = await h.hb.sandboxes.create({ imageName: "node" });
    expect(await sbx.updateNetwork({ allowInternetAccess: false, denyOut: ["10.0.0.0/8"] })).toEqual({
      network: { allowInternetAccess: false, allowOut: [], denyOut: ["10.0.0.0/8"] },
    });
    expect((await sbx.clearNetwork()).network).toEqual({ allowInternetAccess: true, allowOut: [], denyOut: [] });
    await sbx.stop();
  });

  it("stops a sandbox when its timeoutMinutes run out, leaving no process", async () => {
    const sbx = await h.hb.sandboxes.create({ imageName: "node", timeoutMinutes: 0.05 }); // 3 s
    await sbx.processes.start("sleep 600");
    const pids = await h.hostPids(sbx.id);
    expect(pids.length).toBeGreaterThan(1);
    let r = await control(h.emu, "GET", `/api/sandbox/${sbx.id}`);
    expect(r.json.status).toBe("active");
    for (let i = 0; i < 100 && r.json.status === "active"; i++) {
      await new Promise((res) => setTimeout(res, 100));
      r = await control(h.emu, "GET", `/api/sandbox/${sbx.id}`);
    }
    expect(r.json).toMatchObject({ status: "closed", closeReason: "timeout", token: null });
    // "closed" is reported as soon as the stop begins; the kill itself completes within moments.
    for (let i = 0; i < 40 && (await h.hostPids(sbx.id)).length; i++) await new Promise((res) => setTimeout(res, 50));
    expect(await h.hostPids(sbx.id)).toEqual([]);
    expect(pids.filter(isAlive)).toEqual([]);
  });
});
