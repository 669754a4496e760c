// Sandbox, snapshot, volume, profile and image bodies. From the SDKs' params (Node: dist/types/{sandbox,volume,profile}.d.ts
// and what services/sandboxes.js puts on the wire — it renames cpu/memoryMiB/diskMiB to vcpus/memMiB/diskSizeMiB;
// Python: hyperbrowser/models/{sandbox,volume,profile}.py).
import * as z from "zod";
import { count, fields, options, owned } from "./declare.js";
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
  allowOut: strings,
  denyOut: strings,
});

export { exposeBody };
export const unexposeBody = fields({ port });
export const networkBody = options({ allowInternetAccess: z.boolean(), allowOut: strings, denyOut: strings });
export const sandboxSnapshotBody = options({ snapshotName: z.string().min(1).max(256) });

/** Volume names are the caller's own: the gateway scopes them per tenant on the upstream (../names.ts). */
export const createVolumeBody = fields({ name: z.string().min(1).max(63) });
export const createProfileBody = options({ name: z.string().max(256) });

const imageInput = { inputSha256: z.string().regex(/^[0-9a-f]{64}$/i), inputSizeBytes: count(1, Number.MAX_SAFE_INTEGER) };
export const createImageBuildBody = fields({
  imageName: z.string().min(1).max(256),
  ...imageInput,
  inputFormat: z.string().nullish(),
  sourcePlatform: z.string().nullish(),
  imageConfigUser: z.string().nullish(),
  imageInit: options({ env: z.record(z.string(), z.string()), command: z.string(), args: strings }).nullish(),
});
export const completeImageBuildBody = fields({ ...imageInput, inputFormat: z.string().nullish() });
export const cancelImageBuildBody = fields({});
