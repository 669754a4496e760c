// Team image builds: a build record, presigned uploads (size and sha256 checked), and the step that turns verified
// inputs into a team image in the catalog. Inputs come three ways (the Python SDK 1.3.0's formats): one tarball (a
// rootfs export, or a Dockerfile context), a Dockerfile context as a manifest of content-addressed bundles, or a Docker
// image as a manifest of its config and layers. Bundles and layers are blobs kept by digest: a build asks (`uploads[]`)
// only for the ones not yet stored, and an image built from a Docker image digest can be reused under another name.
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { cp, mkdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join, posix } from "node:path";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ApiError, badRequest, notFound } from "./errors.js";
import { buildSkeleton, type ImageCatalog } from "./images.js";

const run = promisify(execFile);

export type ImageBuildStatus =
  | "awaiting_upload"
  | "upload_verified"
  | "dispatching"
  | "building"
  | "verifying"
  | "completed"
  | "failed"
  | "canceled";
export const IMAGE_BUILD_STATUSES: readonly ImageBuildStatus[] = [
  "awaiting_upload",
  "upload_verified",
  "dispatching",
  "building",
  "verifying",
  "completed",
  "failed",
  "canceled",
];

/** The emulator's cap on one tarball; a declared size above it is refused at create. */
export const MAX_UPLOAD_BYTES = 512 * 1024 * 1024;
export const UPLOAD_TTL_SECONDS = 3600;
const INPUT_BUCKET = "emulator-image-builds";
const SHA256 = /^[0-9a-f]{64}$/;
const IMAGE_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** Paths of a rootfs tarball the emulator does not take: every image keeps the host's Debian userland (README). */
const IGNORED_ROOTFS_PATHS = ["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "dev", "proc", "sys", "run"];

export interface ImageBuild {
  id: string;
  teamId: string;
  userId: string | null;
  namespace: string;
  imageName: string;
  imageId: string | null;
  status: ImageBuildStatus;
  inputBucket: string;
  inputKey: string;
  inputSha256: string;
  inputSizeBytes: number;
  outputBucket: string | null;
  outputKey: string | null;
  vmId: string | null;
  errorCode: string | null;
  errorMessage: string | null;
  metadata: Record<string, unknown>;
  completedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export const INPUT_FORMATS = [
  "rootfs_export_tar_gz",
  "dockerfile_context_tar_gz",
  "dockerfile_context_manifest_v1",
  "docker_image_manifest_v1",
] as const;
export type InputFormat = (typeof INPUT_FORMATS)[number];
const MANIFEST_FORMATS: ReadonlySet<string> = new Set(["dockerfile_context_manifest_v1", "docker_image_manifest_v1"]);

/** A blob (context bundle, image layer) a build needs, by digest. */
export interface WantedBlob {
  sha256: string;
  sizeBytes: number;
}

interface BuildRecord extends ImageBuild {
  /** Where the uploaded tarball lands on the host (tarball formats). */
  uploadPath: string;
  uploaded?: { sha256: string; size: number };
  imageInit: Record<string, unknown> | null;
  format: InputFormat;
  /** Manifest formats: the manifest as sent, and the blobs it names (in order). */
  manifest?: Record<string, any>;
  blobs: WantedBlob[];
  /** The skeleton of the image it made (completed builds), for a reuse. */
  skeleton?: string;
}

const isObject = (v: unknown): v is Record<string, any> => !!v && typeof v === "object" && !Array.isArray(v);

/** The blobs a manifest names, checked: each a lowercase sha256 with a size, deduplicated in order. */
function manifestBlobs(list: unknown, what: string): WantedBlob[] {
  if (!Array.isArray(list)) throw badRequest(`${what} must be an array`);
  const out = new Map<string, WantedBlob>();
  for (const [i, b] of list.entries()) {
    if (!isObject(b) || typeof b.sha256 !== "string" || !SHA256.test(b.sha256))
      throw badRequest(`${what}[${i}].sha256 must be a lowercase hex SHA-256`);
    const size = b.sizeBytes;
    if (typeof size !== "number" || !Number.isInteger(size) || size < 0)
      throw badRequest(`${what}[${i}].sizeBytes must be a non-negative integer`);
    if (size > MAX_UPLOAD_BYTES)
      throw new ApiError(413, "upload_too_large", `${what}[${i}] exceeds the limit of ${MAX_UPLOAD_BYTES} bytes`);
    const seen = out.get(b.sha256);
    if (seen && seen.sizeBytes !== size) throw badRequest(`${what}[${i}] names ${b.sha256} with two sizes`);
    out.set(b.sha256, { sha256: b.sha256, sizeBytes: size });
  }
  return [...out.values()];
}

export class ImageBuildStore {
  private readonly builds: BuildRecord[] = [];

  constructor(
    private readonly dir: string,
    private readonly images: ImageCatalog,
  ) {}

  create(body: Record<string, any>): ImageBuild {
    const imageName = body.imageName;
    if (typeof imageName !== "string" || !IMAGE_NAME.test(imageName))
      throw badRequest("imageName must be 1-63 characters of a-z, 0-9, '.', '_' or '-'");
    if (typeof body.inputSha256 !== "string" || !SHA256.test(body.inputSha256))
      throw badRequest("inputSha256 must be a lowercase hex SHA-256");
    const size = body.inputSizeBytes;
    if (typeof size !== "number" || !Number.isInteger(size) || size < 1) throw badRequest("inputSizeBytes must be a positive integer");
    if (size > MAX_UPLOAD_BYTES)
      throw new ApiError(413, "upload_too_large", `inputSizeBytes exceeds the limit of ${MAX_UPLOAD_BYTES} bytes`);
    const format = (body.inputFormat ?? "rootfs_export_tar_gz") as InputFormat;
    if (!INPUT_FORMATS.includes(format)) throw badRequest(`inputFormat must be one of ${INPUT_FORMATS.join(", ")}`);
    if (body.sourcePlatform != null && body.sourcePlatform !== "linux/amd64") throw badRequest("sourcePlatform must be linux/amd64");
    let manifest: Record<string, any> | undefined;
    let blobs: WantedBlob[] = [];
    if (format === "dockerfile_context_manifest_v1") {
      manifest = body.contextManifest;
      if (!isObject(manifest)) throw badRequest("contextManifest is required for inputFormat dockerfile_context_manifest_v1");
      if (typeof manifest.dockerfilePath !== "string" || !manifest.dockerfilePath)
        throw badRequest("contextManifest.dockerfilePath is required");
      blobs = manifestBlobs(manifest.bundles, "contextManifest.bundles");
    } else if (format === "docker_image_manifest_v1") {
      manifest = body.dockerImageManifest;
      if (!isObject(manifest)) throw badRequest("dockerImageManifest is required for inputFormat docker_image_manifest_v1");
      if (typeof manifest.imageDigest !== "string" || !/^sha256:[0-9a-f]{64}$/.test(manifest.imageDigest))
        throw badRequest("dockerImageManifest.imageDigest must be sha256:<64 hex>");
      if (!isObject(manifest.config) || typeof manifest.config.dataBase64 !== "string")
        throw badRequest("dockerImageManifest.config.dataBase64 is required");
      blobs = manifestBlobs(manifest.layers, "dockerImageManifest.layers");
    } else if (body.contextManifest != null || body.dockerImageManifest != null) {
      throw badRequest(`inputFormat ${format} takes no manifest`);
    }
    const existing = this.images.find(imageName);
    if (existing && existing.source === "public") throw new ApiError(409, "image_name_taken", `${imageName} is a public image name`);
    const id = `ibld_${randomBytes(10).toString("hex")}`;
    const now = new Date().toISOString();
    const record: BuildRecord = {
      id,
      teamId: "team_emulator",
      userId: null,
      namespace: "team",
      imageName,
      imageId: null,
      status: "awaiting_upload",
      inputBucket: INPUT_BUCKET,
      inputKey: `team_emulator/${id}/rootfs.tar.gz`,
      inputSha256: body.inputSha256,
      inputSizeBytes: size,
      outputBucket: null,
      outputKey: null,
      vmId: null,
      errorCode: null,
      errorMessage: null,
      metadata: {
        inputFormat: format,
        sourcePlatform: body.sourcePlatform ?? "linux/amd64",
        imageConfigUser: typeof body.imageConfigUser === "string" ? body.imageConfigUser : null,
        ...(format === "dockerfile_context_manifest_v1" || format === "dockerfile_context_tar_gz"
          ? {
              dockerfilePath: typeof body.dockerfilePath === "string" ? body.dockerfilePath : (manifest?.dockerfilePath ?? "Dockerfile"),
              contextMode: manifest?.contextMode ?? "full",
            }
          : {}),
        ...(format === "docker_image_manifest_v1" ? { sourceImageDigest: manifest!.imageDigest } : {}),
      },
      completedAt: null,
      createdAt: now,
      updatedAt: now,
      uploadPath: join(this.dir, id, "rootfs.tar.gz"),
      imageInit: body.imageInit && typeof body.imageInit === "object" ? body.imageInit : null,
      format,
      manifest,
      blobs,
    };
    this.builds.push(record);
    return this.wire(record);
  }

  /** A tarball format's input goes in one presigned upload; a manifest's is inline, its blobs go in `uploads[]`. */
  takesTarball(id: string): boolean {
    return !MANIFEST_FORMATS.has(this.record(id).format);
  }

  /** The blobs build `id` names that are not stored yet (what its `uploads[]` asks for). */
  async missingBlobs(id: string): Promise<WantedBlob[]> {
    const out: WantedBlob[] = [];
    for (const b of this.record(id).blobs) if (!(await this.hasBlob(b.sha256))) out.push(b);
    return out;
  }

  private blobPath(sha256: string): string {
    return join(this.dir, "blobs", sha256);
  }

  private async hasBlob(sha256: string): Promise<boolean> {
    return stat(this.blobPath(sha256)).then(
      (s) => s.isFile(),
      () => false,
    );
  }

  /**
   * Receives one blob of a presigned upload (the URL's token names the digest): streamed to disk, hashed on the way,
   * kept under its digest only when the bytes hash to it and no more than the largest size a build declared arrived.
   */
  async receiveBlob(sha256: string, body: ReadableStream<Uint8Array> | null): Promise<void> {
    const sizes = this.builds.flatMap((b) => b.blobs.filter((x) => x.sha256 === sha256).map((x) => x.sizeBytes));
    if (sizes.length === 0) throw notFound(`Blob ${sha256}`);
    const limit = Math.max(...sizes);
    await mkdir(join(this.dir, "blobs"), { recursive: true });
    const part = `${this.blobPath(sha256)}.${randomBytes(6).toString("hex")}.part`;
    const hash = createHash("sha256");
    const out = createWriteStream(part);
    let size = 0;
    try {
      if (body) {
        for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
          size += chunk.byteLength;
          if (size > limit) throw new ApiError(400, "size_mismatch", `Upload is larger than the declared ${limit} bytes`);
          hash.update(chunk);
          if (!out.write(chunk)) await new Promise((r) => out.once("drain", r));
        }
      }
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      if (!sizes.includes(size)) throw new ApiError(400, "size_mismatch", `Upload is ${size} bytes, the build declared ${limit}`);
      if (hash.digest("hex") !== sha256) throw new ApiError(400, "checksum_mismatch", "Upload SHA-256 does not match the blob's digest");
      await rename(part, this.blobPath(sha256));
    } catch (err) {
      out.destroy();
      await rm(part, { force: true }).catch(() => {});
      throw err;
    }
  }

  /**
   * An exact image already built from Docker image `sourceImageDigest` (a completed docker_image_manifest_v1 build
   * whose image is still in the catalog), registered again as `imageName`: a new completed build. Otherwise no hit.
   */
  async reuse(body: Record<string, any>): Promise<{ hit: boolean; build?: ImageBuild }> {
    const imageName = body.imageName;
    if (typeof imageName !== "string" || !IMAGE_NAME.test(imageName))
      throw badRequest("imageName must be 1-63 characters of a-z, 0-9, '.', '_' or '-'");
    if (typeof body.sourceImageDigest !== "string" || !/^sha256:[0-9a-f]{64}$/.test(body.sourceImageDigest))
      throw badRequest("sourceImageDigest must be sha256:<64 hex>");
    if (body.sourcePlatform != null && body.sourcePlatform !== "linux/amd64") throw badRequest("sourcePlatform must be linux/amd64");
    const existing = this.images.find(imageName);
    if (existing && existing.source === "public") throw new ApiError(409, "image_name_taken", `${imageName} is a public image name`);
    const source = [...this.builds]
      .reverse()
      .find(
        (b) =>
          b.status === "completed" &&
          b.metadata.sourceImageDigest === body.sourceImageDigest &&
          b.skeleton &&
          this.images.find(b.imageName)?.skeleton === b.skeleton,
      );
    if (!source) return { hit: false };
    const id = `ibld_${randomBytes(10).toString("hex")}`;
    const skeleton = join(this.dir, id, "root");
    await mkdir(join(this.dir, id), { recursive: true });
    await cp(source.skeleton!, skeleton, { recursive: true, verbatimSymlinks: true });
    const imageInit = isObject(body.imageInit) ? body.imageInit : source.imageInit;
    const image = this.images.addTeamImage(imageName, skeleton, imageInit);
    const now = new Date().toISOString();
    const record: BuildRecord = {
      ...source,
      id,
      imageName,
      imageId: image.id,
      inputKey: `team_emulator/${id}/docker-image-manifest.json`,
      outputKey: `team_emulator/${id}/root`,
      metadata: {
        ...source.metadata,
        reusedFromBuildId: source.id,
        imageConfigUser: body.imageConfigUser ?? source.metadata.imageConfigUser ?? null,
      },
      completedAt: now,
      createdAt: now,
      updatedAt: now,
      uploadPath: join(this.dir, id, "unused"),
      uploaded: undefined,
      imageInit,
      skeleton,
    };
    this.builds.push(record);
    return { hit: true, build: this.wire(record) };
  }

  get(id: string): ImageBuild {
    return this.wire(this.record(id));
  }

  list(q: { status?: string; limit?: number }): ImageBuild[] {
    if (q.status && !IMAGE_BUILD_STATUSES.includes(q.status as ImageBuildStatus))
      throw badRequest(`status must be one of ${IMAGE_BUILD_STATUSES.join(", ")}`);
    const limit = q.limit === undefined ? 20 : q.limit;
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) throw badRequest("limit must be an integer from 1 to 100");
    return [...this.builds]
      .reverse()
      .filter((b) => !q.status || b.status === q.status)
      .slice(0, limit)
      .map((b) => this.wire(b));
  }

  /**
   * Receives the tarball of a presigned upload. The body is streamed to disk and hashed on the way; a body longer
   * than declared is cut off, and a size or digest that differs from the build's is refused and discarded.
   */
  async receiveUpload(id: string, body: ReadableStream<Uint8Array> | null): Promise<void> {
    const record = this.record(id);
    if (record.status !== "awaiting_upload") throw new ApiError(409, "build_not_awaiting_upload", `Image build ${id} is ${record.status}`);
    await mkdir(join(this.dir, id), { recursive: true });
    const hash = createHash("sha256");
    const out = createWriteStream(record.uploadPath);
    let size = 0;
    try {
      if (body) {
        for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
          size += chunk.byteLength;
          if (size > record.inputSizeBytes)
            throw new ApiError(400, "size_mismatch", `Upload is larger than the declared ${record.inputSizeBytes} bytes`);
          hash.update(chunk);
          if (!out.write(chunk)) await new Promise((r) => out.once("drain", r));
        }
      }
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      if (size !== record.inputSizeBytes)
        throw new ApiError(400, "size_mismatch", `Upload is ${size} bytes, the build declared ${record.inputSizeBytes}`);
      const digest = hash.digest("hex");
      if (digest !== record.inputSha256)
        throw new ApiError(400, "checksum_mismatch", "Upload SHA-256 does not match the build's inputSha256");
      record.uploaded = { sha256: digest, size };
      record.updatedAt = new Date().toISOString();
    } catch (err) {
      out.destroy();
      await rm(record.uploadPath, { force: true }).catch(() => {});
      throw err;
    }
  }

  /** Verifies the upload against the completion parameters, unpacks it over a fresh image root, and registers the image. */
  async complete(id: string, body: Record<string, any>): Promise<ImageBuild> {
    const record = this.record(id);
    if (record.status !== "awaiting_upload") throw new ApiError(409, "build_not_completable", `Image build ${id} is ${record.status}`);
    if (body.inputSha256 !== record.inputSha256 || body.inputSizeBytes !== record.inputSizeBytes) {
      throw badRequest("inputSha256 and inputSizeBytes must match the build", "input_mismatch");
    }
    if (body.inputFormat != null && body.inputFormat !== record.format)
      throw badRequest(`inputFormat must be the build's (${record.format})`, "input_mismatch");
    const missing = MANIFEST_FORMATS.has(record.format) ? await this.missingBlobs(id) : [];
    if (missing.length > 0)
      throw new ApiError(409, "upload_missing", `Image build ${id} is missing ${missing.length} blob(s), first ${missing[0]!.sha256}`);
    if (!MANIFEST_FORMATS.has(record.format) && !record.uploaded)
      throw new ApiError(409, "upload_missing", `Nothing has been uploaded for image build ${id}`);
    this.advance(record, "upload_verified");
    this.advance(record, "building");
    const skeleton = join(this.dir, id, "root");
    try {
      await buildSkeleton(skeleton, `Debian GNU/Linux 12 (bookworm) with the files of team image ${record.imageName}`);
      const excludes = IGNORED_ROOTFS_PATHS.flatMap((p) => [`--exclude=${p}`, `--exclude=./${p}`]);
      let imageInit = record.imageInit;
      if (record.format === "docker_image_manifest_v1") {
        imageInit = await this.unpackDockerImage(record, skeleton, excludes);
      } else if (record.format === "dockerfile_context_manifest_v1") {
        const context = join(this.dir, id, "context");
        await mkdir(context, { recursive: true });
        for (const b of record.blobs) await run("/usr/bin/tar", ["-xzf", this.blobPath(b.sha256), "-C", context], { timeout: 120_000 });
        imageInit = await this.applyDockerfile(record, context, skeleton);
        await rm(context, { recursive: true, force: true }).catch(() => {});
      } else if (record.format === "dockerfile_context_tar_gz") {
        const context = join(this.dir, id, "context");
        await mkdir(context, { recursive: true });
        await run("/usr/bin/tar", ["-xzf", record.uploadPath, "-C", context], { timeout: 120_000 });
        imageInit = await this.applyDockerfile(record, context, skeleton);
        await rm(context, { recursive: true, force: true }).catch(() => {});
      } else {
        await run("/usr/bin/tar", ["-xzf", record.uploadPath, "-C", skeleton, "--anchored", ...excludes, "--no-overwrite-dir"], {
          timeout: 120_000,
        });
      }
      record.imageInit = imageInit;
      this.advance(record, "verifying");
      const image = this.images.addTeamImage(record.imageName, skeleton, record.imageInit);
      record.skeleton = skeleton;
      record.imageId = image.id;
      record.outputBucket = INPUT_BUCKET;
      record.outputKey = `team_emulator/${id}/root`;
      record.completedAt = new Date().toISOString();
      this.advance(record, "completed");
    } catch (err) {
      record.errorCode = "unpack_failed";
      record.errorMessage = String((err as { stderr?: string }).stderr || (err as Error).message)
        .trim()
        .slice(0, 500);
      this.advance(record, "failed");
      await rm(skeleton, { recursive: true, force: true }).catch(() => {});
    }
    await rm(record.uploadPath, { force: true }).catch(() => {});
    return this.wire(record);
  }

  async cancel(id: string): Promise<ImageBuild> {
    const record = this.record(id);
    if (record.status === "completed" || record.status === "failed" || record.status === "canceled") {
      throw new ApiError(409, "build_finished", `Image build ${id} is already ${record.status}`);
    }
    this.advance(record, "canceled");
    await rm(record.uploadPath, { force: true }).catch(() => {});
    return this.wire(record);
  }

  /**
   * A Docker image's layers unpacked in order over the image root (whiteouts are not applied: the emulator's images are
   * file overlays on the host's userland), and its config's Env, Entrypoint+Cmd and WorkingDir as the image's init
   * (the build's own imageInit wins field by field).
   */
  private async unpackDockerImage(record: BuildRecord, skeleton: string, excludes: string[]): Promise<Record<string, unknown> | null> {
    const config = record.manifest!.config as { sha256: string; dataBase64: string };
    const bytes = Buffer.from(config.dataBase64, "base64");
    if (createHash("sha256").update(bytes).digest("hex") !== config.sha256)
      throw new Error("dockerImageManifest.config.dataBase64 does not hash to config.sha256");
    const doc = JSON.parse(bytes.toString("utf8")) as { config?: Record<string, any> };
    for (const b of record.blobs)
      await run("/usr/bin/tar", ["-xf", this.blobPath(b.sha256), "-C", skeleton, "--anchored", ...excludes, "--no-overwrite-dir"], {
        timeout: 120_000,
      });
    const c = doc.config ?? {};
    const env = Object.fromEntries(
      (Array.isArray(c.Env) ? c.Env : [])
        .map((e: unknown) => String(e).split(/=(.*)/s))
        .filter(([k]: string[]) => k && k !== "PATH" && k !== "HOME"),
    ) as Record<string, string>;
    const argv = [...(Array.isArray(c.Entrypoint) ? c.Entrypoint : []), ...(Array.isArray(c.Cmd) ? c.Cmd : [])].map(String);
    return mergeInit({ env, args: argv, workingDir: typeof c.WorkingDir === "string" ? c.WorkingDir : undefined }, record.imageInit);
  }

  /**
   * A Dockerfile applied the way the emulator can: COPY/ADD from the context into the image root, WORKDIR (made),
   * ENV, USER, CMD and ENTRYPOINT. FROM is read as the emulator's Debian userland and RUN is not executed (there is no
   * build VM); both are listed in the build's metadata (`ignoredInstructions`).
   */
  private async applyDockerfile(record: BuildRecord, context: string, skeleton: string): Promise<Record<string, unknown> | null> {
    const rel = String(record.metadata.dockerfilePath ?? "Dockerfile");
    const inside = (base: string, p: string) => {
      const clean = posix.normalize(`/${p}`).slice(1);
      return join(base, clean);
    };
    const text = await readFile(inside(context, rel), "utf8").catch(() => {
      throw new Error(`Dockerfile ${rel} is not in the build context`);
    });
    const lines = text.replace(/\\\r?\n/g, " ").split(/\r?\n/);
    let workdir = "/";
    const env: Record<string, string> = {};
    let entrypoint: string[] = [];
    let cmd: string[] = [];
    const ignored: string[] = [];
    const words = (rest: string): string[] => {
      const t = rest.trim();
      if (t.startsWith("[")) return (JSON.parse(t) as unknown[]).map(String);
      return ["/bin/sh", "-c", t];
    };
    for (const raw of lines) {
      const line = raw.trim();
      if (!line || line.startsWith("#")) continue;
      const m = /^(\w+)\s+(.*)$/s.exec(line);
      if (!m) continue;
      const op = m[1]!.toUpperCase();
      const rest = m[2]!;
      if (op === "COPY" || op === "ADD") {
        const parts = (rest.trim().startsWith("[") ? (JSON.parse(rest) as string[]) : rest.trim().split(/\s+/)).filter(
          (p) => !p.startsWith("--"),
        );
        const dest = parts.pop()!;
        const destAbs = posix.isAbsolute(dest) ? dest : posix.join(workdir, dest);
        for (const src of parts) {
          const from = inside(context, src);
          const info = await stat(from);
          const to = inside(
            skeleton,
            destAbs.endsWith("/") || parts.length > 1 || info.isDirectory()
              ? posix.join(destAbs, info.isDirectory() ? "" : posix.basename(src))
              : destAbs,
          );
          await mkdir(info.isDirectory() ? to : join(to, ".."), { recursive: true });
          await cp(from, to, { recursive: true, verbatimSymlinks: true });
        }
      } else if (op === "WORKDIR") {
        workdir = posix.isAbsolute(rest.trim()) ? rest.trim() : posix.join(workdir, rest.trim());
        await mkdir(inside(skeleton, workdir), { recursive: true });
      } else if (op === "ENV") {
        const kv = /^(\S+?)(?:=|\s+)(.*)$/s.exec(rest.trim());
        if (kv) env[kv[1]!] = kv[2]!.replace(/^"(.*)"$/s, "$1");
      } else if (op === "CMD") cmd = words(rest);
      else if (op === "ENTRYPOINT") entrypoint = words(rest);
      else if (op === "USER") record.metadata.imageConfigUser ??= rest.trim();
      else ignored.push(op);
    }
    record.metadata.ignoredInstructions = ignored;
    return mergeInit({ env, args: [...entrypoint, ...cmd], workingDir: workdir === "/" ? undefined : workdir }, record.imageInit);
  }

  private advance(record: BuildRecord, status: ImageBuildStatus): void {
    record.status = status;
    record.updatedAt = new Date().toISOString();
  }

  private record(id: string): BuildRecord {
    const found = this.builds.find((b) => b.id === id);
    if (!found) throw notFound(`Image build ${id}`);
    return found;
  }

  private wire(r: BuildRecord): ImageBuild {
    const { uploadPath: _p, uploaded: _u, imageInit, format: _f, manifest: _m, blobs: _b, skeleton: _s, ...rest } = r;
    return { ...rest, metadata: { ...rest.metadata, imageInit } };
  }
}

/** An image's init from what the image says (`auto`), with the build's own (`explicit`) winning field by field. */
function mergeInit(
  auto: { env: Record<string, string>; args: string[]; workingDir?: string },
  explicit: Record<string, any> | null,
): Record<string, unknown> | null {
  const env = { ...auto.env, ...(isObject(explicit?.env) ? explicit.env : {}) };
  const explicitArgs = Array.isArray(explicit?.args) && explicit.args.length > 0 ? explicit.args : undefined;
  const command = typeof explicit?.command === "string" && explicit.command ? explicit.command : undefined;
  const args = command ? undefined : (explicitArgs ?? (auto.args.length > 0 ? auto.args : undefined));
  const workingDir = (typeof explicit?.workingDir === "string" && explicit.workingDir) || auto.workingDir;
  const init = {
    ...(Object.keys(env).length > 0 ? { env } : {}),
    ...(command ? { command } : {}),
    ...(args ? { args } : {}),
    ...(workingDir ? { workingDir } : {}),
  };
  return Object.keys(init).length > 0 ? init : null;
}
