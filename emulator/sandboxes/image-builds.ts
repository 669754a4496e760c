// Team image builds: a build record, a presigned upload of the rootfs tarball (size and sha256 checked), and the
// step that turns a verified upload into a team image in the catalog.
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
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

interface BuildRecord extends ImageBuild {
  /** Where the uploaded tarball lands on the host. */
  uploadPath: string;
  uploaded?: { sha256: string; size: number };
  imageInit: Record<string, unknown> | null;
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
    if (body.inputFormat !== undefined && body.inputFormat !== "rootfs_export_tar_gz")
      throw badRequest("inputFormat must be rootfs_export_tar_gz");
    if (body.sourcePlatform !== undefined && body.sourcePlatform !== "linux/amd64") throw badRequest("sourcePlatform must be linux/amd64");
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
        inputFormat: body.inputFormat ?? "rootfs_export_tar_gz",
        sourcePlatform: body.sourcePlatform ?? "linux/amd64",
        imageConfigUser: typeof body.imageConfigUser === "string" ? body.imageConfigUser : null,
      },
      completedAt: null,
      createdAt: now,
      updatedAt: now,
      uploadPath: join(this.dir, id, "rootfs.tar.gz"),
      imageInit: body.imageInit && typeof body.imageInit === "object" ? body.imageInit : null,
    };
    this.builds.push(record);
    return this.wire(record);
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
    if (!record.uploaded) throw new ApiError(409, "upload_missing", `Nothing has been uploaded for image build ${id}`);
    this.advance(record, "upload_verified");
    this.advance(record, "building");
    const skeleton = join(this.dir, id, "root");
    try {
      await buildSkeleton(skeleton, `Debian GNU/Linux 12 (bookworm) with the files of team image ${record.imageName}`);
      const excludes = IGNORED_ROOTFS_PATHS.flatMap((p) => [`--exclude=${p}`, `--exclude=./${p}`]);
      await run("/usr/bin/tar", ["-xzf", record.uploadPath, "-C", skeleton, "--anchored", ...excludes, "--no-overwrite-dir"], {
        timeout: 120_000,
      });
      this.advance(record, "verifying");
      const image = this.images.addTeamImage(record.imageName, skeleton, record.imageInit);
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
    const { uploadPath: _p, uploaded: _u, imageInit, ...rest } = r;
    return { ...rest, metadata: { ...rest.metadata, imageInit } };
  }
}
