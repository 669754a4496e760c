// Sandbox, snapshot, volume, profile and image bodies. From the SDKs' params (Node: dist/types/{sandbox,volume,profile}.d.ts
// and what services/sandboxes.js puts on the wire — it renames cpu/memoryMiB/diskMiB to vcpus/memMiB/diskSizeMiB;
// Python: hyperbrowser/models/{sandbox,volume,profile}.py).
import * as z from "zod";
import { count, egressRules, fields, options, owned } from "./declare.js";
import { MAX_TIMEOUT_MINUTES } from "./sessions.js";

const strings = z.array(z.string().max(4096)).max(1000);
const port = count(1, 65_535);
const exposeBody = fields({ port, auth: z.boolean().nullish() });

/**
 * POST /api/sandbox: from an image or from a snapshot. `mounts` maps a path inside the sandbox to one of the caller's
 * volumes; `snapshotId` must be the caller's, and a `snapshotName` is resolved among the caller's snapshots only.
 */
export const createSandboxBody = options({
  imageName: z.string().min(1).max(256),
  imageId: z.string().min(1).max(256),
  snapshotName: z.string().min(1).max(256),
  snapshotId: owned("snapshot"),
  region: z.string(),
  enableRecording: z.boolean(),
  exposedPorts: z.array(exposeBody).max(100),
  mounts: z.record(
    z.string().min(1).max(4096),
    fields({ id: owned("volume"), type: z.enum(["rw", "ro"]).nullish(), shared: z.boolean().nullish() }),
  ),
  timeoutMinutes: z.number().positive().max(MAX_TIMEOUT_MINUTES),
  vcpus: count(1, 256),
  memMiB: count(1, 4 * 1024 * 1024),
  diskSizeMiB: count(1, 64 * 1024 * 1024),
  allowInternetAccess: z.boolean(),
  allowOut: egressRules(),
  denyOut: egressRules(),
});

export { exposeBody };
export const unexposeBody = fields({ port });
export const networkBody = options({ allowInternetAccess: z.boolean(), allowOut: egressRules(), denyOut: egressRules() });
export const sandboxSnapshotBody = options({ snapshotName: z.string().min(1).max(256) });

/** Volume names are the caller's own: the gateway scopes them per tenant on the upstream (../names.ts). */
export const createVolumeBody = fields({ name: z.string().min(1).max(63) });
export const createProfileBody = options({ name: z.string().max(256) });

const imageInput = { inputSha256: z.string().regex(/^[0-9a-f]{64}$/i), inputSizeBytes: count(1, Number.MAX_SAFE_INTEGER) };
const sha256 = z.string().regex(/^[0-9a-f]{64}$/i);
/** How the build's input reaches the upstream: a rootfs tarball, a Dockerfile context (one tarball, or a manifest of
 * bundles), or a Docker image's manifest of layers (Python SDK 1.3.0's SandboxImageBuildInputFormat). */
const inputFormat = z.enum([
  "rootfs_export_tar_gz",
  "dockerfile_context_tar_gz",
  "dockerfile_context_manifest_v1",
  "docker_image_manifest_v1",
]);
const sourcePlatform = z.literal("linux/amd64");
const imageInit = options({ env: z.record(z.string(), z.string()), command: z.string(), args: strings, workingDir: z.string().max(4096) });
/** A Dockerfile path inside the build context (relative; the upstream checks it resolves inside). */
const dockerfilePath = z.string().min(1).max(4096);
/** The build context as content-addressed bundles (tar.gz); the answer's `uploads[]` names the ones to send. */
const contextManifest = fields({
  version: z.literal(1).optional(),
  dockerfilePath,
  contextMode: z.enum(["sparse", "full"]),
  fallbackReason: z.string().max(256).nullish(),
  bundles: z
    .array(
      fields({
        sha256,
        sizeBytes: count(0, Number.MAX_SAFE_INTEGER),
        uncompressedSizeBytes: count(0, Number.MAX_SAFE_INTEGER),
        entryCount: count(0, 10_000_000),
      }),
    )
    .max(1024),
});
const dockerImageConfig = fields({ sha256, sizeBytes: count(0, Number.MAX_SAFE_INTEGER), dataBase64: z.string().max(24 * 1024 * 1024) });
/** A Docker image as its config and layers (content-addressed); the answer's `uploads[]` names the layers to send. */
const dockerImageManifest = fields({
  version: z.literal(1).optional(),
  imageDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  descriptor: dockerImageConfig.nullish(),
  config: dockerImageConfig,
  layers: z.array(fields({ sha256, sizeBytes: count(0, Number.MAX_SAFE_INTEGER) })).max(512),
});

/**
 * POST /api/images/builds. The answer (`{ build, upload?, uploads[] }`) is relayed as the upstream sent it: `upload`
 * and `uploads[]` are presigned object-storage URLs (their own credential, on the storage's host, never the API's),
 * which the client PUTs to directly; the gateway neither rewrites nor proxies them (docs/image-builds.md).
 */
export const createImageBuildBody = fields({
  imageName: z.string().min(1).max(256),
  ...imageInput,
  inputFormat: inputFormat.nullish(),
  sourcePlatform: sourcePlatform.nullish(),
  imageConfigUser: z.string().nullish(),
  imageInit: imageInit.nullish(),
  dockerfilePath: dockerfilePath.nullish(),
  contextManifest: contextManifest.nullish(),
  dockerImageManifest: dockerImageManifest.nullish(),
});
/** POST /api/images/builds/reuse: an exact image already built from this Docker image digest, under a new name. */
export const reuseImageBuildBody = fields({
  imageName: z.string().min(1).max(256),
  sourceImageDigest: z.string().regex(/^sha256:[0-9a-f]{64}$/),
  sourcePlatform: sourcePlatform.nullish(),
  imageConfigUser: z.string().nullish(),
  imageInit: imageInit.nullish(),
});
export const completeImageBuildBody = fields({ ...imageInput, inputFormat: inputFormat.nullish() });
export const cancelImageBuildBody = fields({});
