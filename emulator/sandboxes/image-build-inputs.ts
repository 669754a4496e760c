// What a team image build takes: its wire shape and statuses, the input formats (a tarball, or a manifest of
// content-addressed blobs), the checks on a manifest's blobs, and how an upload arrives (streamed to disk, hashed on
// the way, bounded by the declared size).
import { createHash } from "node:crypto";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ApiError, badRequest } from "./errors.js";

export const run = promisify(execFile);

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
export const INPUT_BUCKET = "emulator-image-builds";
export const SHA256 = /^[0-9a-f]{64}$/;
export const IMAGE_NAME = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** Paths of a rootfs tarball the emulator does not take: every image keeps the host's Debian userland (README). */
export const IGNORED_ROOTFS_PATHS = ["usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "dev", "proc", "sys", "run"];

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
export const MANIFEST_FORMATS: ReadonlySet<string> = new Set(["dockerfile_context_manifest_v1", "docker_image_manifest_v1"]);

/** A blob (context bundle, image layer) a build needs, by digest. */
export interface WantedBlob {
  sha256: string;
  sizeBytes: number;
}

export interface BuildRecord extends ImageBuild {
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

export const isObject = (v: unknown): v is Record<string, any> => !!v && typeof v === "object" && !Array.isArray(v);

/** The blobs a manifest names, checked: each a lowercase sha256 with a size, deduplicated in order. */
export function manifestBlobs(list: unknown, what: string): WantedBlob[] {
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

/**
 * Streams an upload's body to `path`, hashing it on the way and cutting it off past `limit` bytes; `check` then judges
 * the size and the hex SHA-256. On any failure the file is removed and the error thrown.
 */
export async function receiveHashed(
  body: ReadableStream<Uint8Array> | null,
  path: string,
  limit: number,
  check: (size: number, digest: string) => void | Promise<void>,
): Promise<void> {
  const hash = createHash("sha256");
  const out = createWriteStream(path);
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
    await check(size, hash.digest("hex"));
  } catch (err) {
    out.destroy();
    await rm(path, { force: true }).catch(() => {});
    throw err;
  }
}
