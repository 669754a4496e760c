// Volumes, image builds and image/snapshot deletion on the emulator, driven by the unmodified SDK.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { request } from "undici";
import { control, startSandboxHarness, type SandboxHarness } from "./sandboxes-harness.js";
import { statusOf } from "../helpers/sdk-status.js";

let h: SandboxHarness;
let work: string;
beforeAll(async () => {
  h = await startSandboxHarness();
  work = mkdtempSync(join(tmpdir(), "control-sandboxes-"));
});
afterAll(async () => {
  await h?.close();
  rmSync(work, { recursive: true, force: true });
});

/** A rootfs export: a few files under /opt and /etc, and a /usr the emulator must ignore. */
function rootfsTarball(name: string): { path: string; bytes: Buffer; sha256: string } {
  const root = join(work, `${name}-root`);
  mkdirSync(join(root, "opt/app"), { recursive: true });
  mkdirSync(join(root, "usr/bin"), { recursive: true });
  writeFileSync(join(root, "opt/app/hello.txt"), `hello from ${name}\n`);
  writeFileSync(join(root, "usr/bin/should-not-appear"), "x");
  const path = join(work, `${name}.tar.gz`);
  execFileSync("tar", ["-czf", path, "-C", root, "."]);
  const bytes = readFileSync(path);
  return { path, bytes, sha256: createHash("sha256").update(bytes).digest("hex") };
}

describe("volumes", { timeout: 120_000 }, () => {
  it("creates, reads, lists with search and paging, and deletes by id", async () => {
    const a = await h.hb.volumes.create({ name: "alpha-data" });
    expect(a).toMatchObject({ name: "alpha-data", size: 0 });
    expect(a.id).toMatch(/^vol_/);
    await h.hb.volumes.create({ name: "beta-data" });
    expect(await h.hb.volumes.get(a.id)).toMatchObject({ id: a.id, name: "alpha-data" });
    const found = await h.hb.volumes.list({ search: "ALPHA" });
    expect(found.volumes.map((v) => v.id)).toEqual([a.id]);
    const paged = await h.hb.volumes.list({ limit: 1, page: 2 });
    expect(paged).toMatchObject({ page: 2, perPage: 1 });
    expect(paged.volumes).toHaveLength(1);
    expect(paged.totalCount).toBeGreaterThanOrEqual(2);
    expect(await h.hb.volumes.delete(a.id)).toEqual({ deleted: true, id: a.id, name: "alpha-data" });
    expect(await statusOf(h.hb.volumes.get(a.id))).toBe(404);
  });

  it("deletes by name case-insensitively, and refuses a name two volumes share with 409", async () => {
    const v = await h.hb.volumes.create({ name: "Named-Vol" });
    expect(await h.hb.volumes.delete("named-vol")).toMatchObject({ deleted: true, id: v.id });
    await h.hb.volumes.create({ name: "twin" });
    await h.hb.volumes.create({ name: "twin" });
    const r = await control(h.emu, "DELETE", "/api/volume/twin");
    expect(r.status).toBe(409);
    expect(r.json.code).toBe("ambiguous_volume_name");
  });

  it("answers unknown volumes with 404 {message, code} and a bad name with 400", async () => {
    const r = await control(h.emu, "GET", "/api/volume/vol_nope");
    expect(r.status).toBe(404);
    expect(r.json).toEqual({ message: "Volume vol_nope not found", code: "not_found" });
    expect((await control(h.emu, "DELETE", "/api/volume/nope")).status).toBe(404);
    expect((await control(h.emu, "POST", "/api/volume", {})).status).toBe(400);
    expect((await control(h.emu, "POST", "/api/sandbox", { imageName: "debian", mounts: { "/data": { id: "vol_nope" } } })).status).toBe(
      404,
    );
    const reserved = await control(h.emu, "POST", "/api/sandbox", {
      imageName: "debian",
      mounts: { "/usr/x": { id: (await h.hb.volumes.create({ name: "r" })).id } },
    });
    expect(reserved.status).toBe(400);
  });

  it("mounts a volume into sandboxes: files written in one are read in another, ro is read-only, delete waits for unmount", async () => {
    const vol = await h.hb.volumes.create({ name: "shared-work" });
    const writer = await h.hb.sandboxes.create({ imageName: "debian", mounts: { "/data": { id: vol.id } } });
    const wrote = await writer.exec("echo persisted > /data/note.txt && id -un && stat -c %U /data/note.txt");
    expect(wrote.exitCode).toBe(0);
    expect(wrote.stdout).toBe("ubuntu\nubuntu\n");
    const reader = await h.hb.sandboxes.create({ imageName: "node", mounts: { "/mnt/in": { id: vol.id, type: "ro" } } });
    expect((await reader.exec("cat /mnt/in/note.txt")).stdout).toBe("persisted\n");
    const denied = await reader.exec("echo no > /mnt/in/other.txt");
    expect(denied.exitCode).not.toBe(0);
    expect(denied.stderr).toMatch(/Read-only file system/);
    expect((await h.hb.volumes.get(vol.id)).size).toBe("persisted\n".length);

    const busy = await control(h.emu, "DELETE", `/api/volume/${vol.id}`);
    expect(busy.status).toBe(409);
    expect(busy.json.code).toBe("volume_in_use");
    await Promise.all([writer.stop(), reader.stop()]);
    expect(await h.hb.volumes.delete(vol.id)).toMatchObject({ deleted: true });
  });
});

describe("image builds", { timeout: 120_000 }, () => {
  it("uploads a checked tarball, completes into a team image whose files sandboxes see, lists and deletes it", async () => {
    const tar = rootfsTarball("app-image");
    const { build, upload } = await h.hb.sandboxes.createImageBuild({
      imageName: "app-image",
      inputSha256: tar.sha256,
      inputSizeBytes: tar.bytes.length,
      inputFormat: "rootfs_export_tar_gz",
      imageInit: { env: { A: "1" } },
    });
    expect(build).toMatchObject({
      imageName: "app-image",
      status: "awaiting_upload",
      inputSha256: tar.sha256,
      inputSizeBytes: tar.bytes.length,
    });
    expect(upload).toMatchObject({ method: "PUT", expiresInSeconds: 3600, objectKey: build.inputKey });
    expect(upload.maxUploadBytes).toBeGreaterThanOrEqual(tar.bytes.length);

    // Completing before the upload, a wrong digest, a forged token: all refused, the build still awaits its upload.
    expect(await statusOf(h.hb.sandboxes.completeImageBuild(build.id, { inputSha256: tar.sha256, inputSizeBytes: tar.bytes.length }))).toBe(
      409,
    );
    const corrupt = Buffer.from(tar.bytes);
    corrupt[corrupt.length - 1] ^= 0xff;
    const bad = await request(upload.url, { method: "PUT", headers: upload.headers, body: corrupt });
    expect(bad.statusCode).toBe(400);
    expect(await bad.body.json()).toMatchObject({ code: "checksum_mismatch" });
    const short = await request(upload.url, { method: "PUT", headers: upload.headers, body: tar.bytes.subarray(1) });
    expect(short.statusCode).toBe(400);
    await short.body.dump();
    const forged = await request(upload.url.replace(/token=[^&]+/, "token=forged"), { method: "PUT", body: tar.bytes });
    expect(forged.statusCode).toBe(401);
    await forged.body.dump();

    const ok = await request(upload.url, { method: "PUT", headers: upload.headers, body: tar.bytes });
    expect(ok.statusCode).toBe(200);
    await ok.body.dump();
    const done = await h.hb.sandboxes.completeImageBuild(build.id, { inputSha256: tar.sha256, inputSizeBytes: tar.bytes.length });
    expect(done).toMatchObject({ id: build.id, status: "completed" });
    expect(done.imageId).toMatch(/^img_/);
    expect(await h.hb.sandboxes.getImageBuild(build.id)).toMatchObject({ status: "completed", imageId: done.imageId });
    expect((await h.hb.sandboxes.listImageBuilds({ status: "completed" })).builds.map((b) => b.id)).toContain(build.id);
    expect((await h.hb.sandboxes.listImageBuilds({ status: "canceled" })).builds.map((b) => b.id)).not.toContain(build.id);

    const teamImages = await h.hb.sandboxes.listImages({ source: "team" });
    expect(teamImages.images).toEqual([
      expect.objectContaining({ imageName: "app-image", id: done.imageId, source: "team", imageInit: { env: { A: "1" } } }),
    ]);
    const sbx = await h.hb.sandboxes.create({ imageName: "app-image", imageId: done.imageId! });
    expect((await sbx.exec("cat /opt/app/hello.txt")).stdout).toBe("hello from app-image\n");
    expect((await sbx.exec("test -e /usr/bin/should-not-appear")).exitCode).not.toBe(0);
    expect((await sbx.exec("node -e 'console.log(1+1)'")).stdout).toBe("2\n");
    await sbx.stop();

    expect(await statusOf(h.hb.sandboxes.cancelImageBuild(build.id))).toBe(409);
    expect(await h.hb.sandboxes.deleteImage("app-image")).toEqual({
      deleted: true,
      id: done.imageId,
      imageName: "app-image",
      uploaded: true,
    });
    expect((await h.hb.sandboxes.listImages({ source: "team" })).images).toEqual([]);
  });

  it("cancels a build awaiting its upload; the upload URL then refuses the tarball", async () => {
    const tar = rootfsTarball("to-cancel");
    const { build, upload } = await h.hb.sandboxes.createImageBuild({
      imageName: "to-cancel",
      inputSha256: tar.sha256,
      inputSizeBytes: tar.bytes.length,
    });
    expect(await h.hb.sandboxes.cancelImageBuild(build.id)).toMatchObject({ id: build.id, status: "canceled" });
    const late = await request(upload.url, { method: "PUT", body: tar.bytes });
    expect(late.statusCode).toBe(409);
    await late.body.dump();
  });

  it("answers unknown builds and images with 404, public images with 403, bad parameters with 400", async () => {
    for (const [method, path] of [
      ["GET", "/api/images/builds/ibld_nope"],
      ["POST", "/api/images/builds/ibld_nope/complete"],
      ["POST", "/api/images/builds/ibld_nope/cancel"],
      ["DELETE", "/api/images/no-such-image"],
    ]) {
      const r = await control(h.emu, method, path, method === "POST" ? {} : undefined);
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.json.code).toBe("not_found");
    }
    expect(await statusOf(h.hb.sandboxes.deleteImage("node"))).toBe(403);
    expect(await statusOf(h.hb.sandboxes.createImageBuild({ imageName: "x", inputSha256: "nothex", inputSizeBytes: 1 }))).toBe(400);
    expect(await statusOf(h.hb.sandboxes.createImageBuild({ imageName: "node", inputSha256: "a".repeat(64), inputSizeBytes: 1 }))).toBe(
      409,
    );
    expect(await statusOf(h.hb.sandboxes.listImageBuilds({ status: "bogus" as never }))).toBe(400);
  });
});

describe("authentication", () => {
  it("refuses the new control routes without the API key, and accepts it as a Bearer token", async () => {
    for (const path of ["/api/volume", "/api/images/builds", "/api/volume/vol_x"]) {
      const none = await request(`${h.emu.controlUrl}${path}`);
      expect(none.statusCode, path).toBe(401);
      expect(await none.body.json()).toMatchObject({ code: "unauthorized" });
    }
    const bearer = await request(`${h.emu.controlUrl}/api/volume`, { headers: { authorization: `Bearer ${h.emu.apiKey}` } });
    expect(bearer.statusCode).toBe(200);
    await bearer.body.dump();
  });
});

describe("snapshot deletion", { timeout: 120_000 }, () => {
  it("deletes a snapshot by name; it can no longer be read or started from", async () => {
    const sbx = await h.hb.sandboxes.create({ imageName: "debian" });
    const snap = await sbx.createMemorySnapshot({ snapshotName: "to-delete" });
    await sbx.stop();
    expect(await h.hb.sandboxes.deleteSnapshot("to-delete")).toEqual({ deleted: true });
    expect(await statusOf(h.hb.sandboxes.getSnapshot(snap.snapshotId))).toBe(404);
    expect((await control(h.emu, "POST", "/api/sandbox", { snapshotName: "to-delete" })).status).toBe(404);
    expect((await control(h.emu, "DELETE", "/api/snapshots/to-delete")).status).toBe(404);
  });
});

describe("image builds from a Dockerfile context", { timeout: 120_000 }, () => {
  /** A build context: a Dockerfile and an app directory, as a tar.gz (the SDK's bundle, or the whole context). */
  function contextTarball(name: string): { bytes: Buffer; sha256: string } {
    const root = join(work, `${name}-context`);
    mkdirSync(join(root, "app"), { recursive: true });
    writeFileSync(
      join(root, "Dockerfile"),
      `FROM debian:bookworm\nWORKDIR /srv\nCOPY app/ /srv/app/\nENV MODE=${name}\nRUN false\nCMD ["sleep", "5"]\n`,
    );
    writeFileSync(join(root, "app/hello.txt"), `hello from ${name}\n`);
    const path = join(work, `${name}.tar.gz`);
    execFileSync("tar", ["-czf", path, "-C", root, "Dockerfile", "app"]);
    const bytes = readFileSync(path);
    return { bytes, sha256: createHash("sha256").update(bytes).digest("hex") };
  }

  it("a manifest build asks for its missing bundle on the storage host, refuses to complete without it, and builds", async () => {
    const bundle = contextTarball("ctx-manifest");
    const manifest = {
      version: 1,
      dockerfilePath: "Dockerfile",
      contextMode: "full",
      bundles: [{ sha256: bundle.sha256, sizeBytes: bundle.bytes.length, uncompressedSizeBytes: 1, entryCount: 3 }],
    };
    const input = Buffer.from(JSON.stringify(manifest));
    const inputSha256 = createHash("sha256").update(input).digest("hex");
    const created = await control(h.emu, "POST", "/api/images/builds", {
      imageName: "ctx-manifest",
      inputSha256,
      inputSizeBytes: input.length,
      inputFormat: "dockerfile_context_manifest_v1",
      dockerfilePath: "Dockerfile",
      contextManifest: manifest,
    });
    expect(created.status).toBe(200);
    expect(created.json.upload).toBeUndefined();
    expect(created.json.uploads).toEqual([
      expect.objectContaining({ sha256: bundle.sha256, method: "PUT", objectKey: `blobs/sha256/${bundle.sha256}` }),
    ]);
    const url = created.json.uploads[0].url as string;
    expect(new URL(url).origin).toBe(h.emu.storageUrl);
    const id = created.json.build.id as string;
    const complete = (body: unknown) => control(h.emu, "POST", `/api/images/builds/${id}/complete`, body);
    expect((await complete({ inputSha256, inputSizeBytes: input.length })).json).toMatchObject({ code: "upload_missing" });
    const wrong = await request(url, { method: "PUT", body: Buffer.concat([bundle.bytes, Buffer.from("x")]) });
    expect(wrong.statusCode).toBe(400);
    await wrong.body.dump();
    const put = await request(url, { method: "PUT", headers: created.json.uploads[0].headers, body: bundle.bytes });
    expect(put.statusCode).toBe(200);
    await put.body.dump();
    const done = await complete({ inputSha256, inputSizeBytes: input.length, inputFormat: "dockerfile_context_manifest_v1" });
    expect(done.json.build).toMatchObject({
      status: "completed",
      metadata: { ignoredInstructions: ["FROM", "RUN"], imageInit: { env: { MODE: "ctx-manifest" }, workingDir: "/srv" } },
    });
    const sbx = await h.hb.sandboxes.create({ imageName: "ctx-manifest" });
    expect((await sbx.exec("cat /srv/app/hello.txt")).stdout).toBe("hello from ctx-manifest\n");
    await sbx.stop();
    expect((await h.hb.sandboxes.deleteImage("ctx-manifest")).deleted).toBe(true);
  });

  it("a context tarball build (dockerfile_context_tar_gz) uploads its one tarball and applies the Dockerfile", async () => {
    const tar = contextTarball("ctx-tarball");
    const created = await control(h.emu, "POST", "/api/images/builds", {
      imageName: "ctx-tarball",
      inputSha256: tar.sha256,
      inputSizeBytes: tar.bytes.length,
      inputFormat: "dockerfile_context_tar_gz",
    });
    expect(created.json.uploads).toEqual([]);
    const put = await request(created.json.upload.url, { method: "PUT", headers: created.json.upload.headers, body: tar.bytes });
    expect(put.statusCode).toBe(200);
    await put.body.dump();
    const done = await control(h.emu, "POST", `/api/images/builds/${created.json.build.id}/complete`, {
      inputSha256: tar.sha256,
      inputSizeBytes: tar.bytes.length,
    });
    expect(done.json.build).toMatchObject({ status: "completed" });
    const sbx = await h.hb.sandboxes.create({ imageName: "ctx-tarball" });
    expect((await sbx.exec("cat /srv/app/hello.txt")).stdout).toBe("hello from ctx-tarball\n");
    await sbx.stop();
    expect((await h.hb.sandboxes.deleteImage("ctx-tarball")).deleted).toBe(true);
  });
});
