// Team image builds: a build record, presigned uploads (size and sha256 checked), and the step that turns verified
// inputs into a team image in the catalog. Inputs come three ways (the Python SDK 1.3.0's formats): one tarball (a
// rootfs export, or a Dockerfile context), a Dockerfile context as a manifest of content-addressed bundles, or a Docker
// image as a manifest of its config and layers. Bundles and layers are blobs kept by digest: a build asks (`uploads[]`)
// only for the ones not yet stored, and an image built from a Docker image digest can be reused under another name.
import { randomBytes } from "node:crypto";
import { cp, mkdir, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { ApiError, badRequest, notFound } from "./errors.js";
import { buildSkeleton, type ImageCatalog } from "./images.js";
import {
  type BuildRecord,
  IGNORED_ROOTFS_PATHS,
  IMAGE_BUILD_STATUSES,
  IMAGE_NAME,
  INPUT_BUCKET,
  INPUT_FORMATS,
  type ImageBuild,
  type ImageBuildStatus,
  type InputFormat,
  isObject,
  MANIFEST_FORMATS,
  MAX_UPLOAD_BYTES,
  manifestBlobs,
  receiveHashed,
  run,
  SHA256,
  type WantedBlob,
} from "./image-build-inputs.js";
import { applyDockerfile, unpackDockerImage } from "./image-build-apply.js";

export {
  IMAGE_BUILD_STATUSES,
  INPUT_FORMATS,
  MAX_UPLOAD_BYTES,
  UPLOAD_TTL_SECONDS,
  type ImageBuild,
  type ImageBuildStatus,
  type InputFormat,
  type WantedBlob,
} from "./image-build-inputs.js";

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
    await receiveHashed(body, part, limit, async (size, digest) => {
      if (!sizes.includes(size)) throw new ApiError(400, "size_mismatch", `Upload is ${size} bytes, the build declared ${limit}`);
      if (digest !== sha256) throw new ApiError(400, "checksum_mismatch", "Upload SHA-256 does not match the blob's digest");
      await rename(part, this.blobPath(sha256));
    });
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
    await receiveHashed(body, record.uploadPath, record.inputSizeBytes, (size, digest) => {
      if (size !== record.inputSizeBytes)
        throw new ApiError(400, "size_mismatch", `Upload is ${size} bytes, the build declared ${record.inputSizeBytes}`);
      if (digest !== record.inputSha256)
        throw new ApiError(400, "checksum_mismatch", "Upload SHA-256 does not match the build's inputSha256");
      record.uploaded = { sha256: digest, size };
      record.updatedAt = new Date().toISOString();
    });
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
        imageInit = await unpackDockerImage(record, (sha) => this.blobPath(sha), skeleton, excludes);
      } else if (record.format === "dockerfile_context_manifest_v1") {
        const context = join(this.dir, id, "context");
        await mkdir(context, { recursive: true });
        for (const b of record.blobs) await run("/usr/bin/tar", ["-xzf", this.blobPath(b.sha256), "-C", context], { timeout: 120_000 });
        imageInit = await applyDockerfile(record, context, skeleton);
        await rm(context, { recursive: true, force: true }).catch(() => {});
      } else if (record.format === "dockerfile_context_tar_gz") {
        const context = join(this.dir, id, "context");
        await mkdir(context, { recursive: true });
        await run("/usr/bin/tar", ["-xzf", record.uploadPath, "-C", context], { timeout: 120_000 });
        imageInit = await applyDockerfile(record, context, skeleton);
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
