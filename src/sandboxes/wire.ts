// The upstream's sandbox records: SandboxDetail (create, get, list entries), its runtime and exposed ports.
import * as z from "zod";
import { lenient } from "../upstream/records.js";

export const Exposure = z.looseObject({
  port: lenient(z.number()),
  auth: lenient(z.boolean()),
  url: lenient(z.string()),
  browserUrl: lenient(z.string()),
  browserUrlExpiresAt: lenient(z.string()),
});
export type Exposure = z.infer<typeof Exposure>;

const SandboxRuntime = z.looseObject({
  transport: lenient(z.string()),
  host: lenient(z.string().nullable()),
  baseUrl: lenient(z.string()),
});

export const SandboxDetail = z.looseObject({
  id: lenient(z.union([z.string(), z.number()])),
  status: lenient(z.string()),
  /** The runtime bearer; null for a stopped sandbox. */
  token: lenient(z.string().nullable()),
  tokenExpiresAt: lenient(z.string().nullable()),
  runtime: lenient(SandboxRuntime.nullable()),
  exposedPorts: lenient(z.array(Exposure)),
  sessionUrl: lenient(z.string().nullable()),
  snapshotId: lenient(z.string()),
  snapshotName: lenient(z.string()),
});
export type SandboxDetail = z.infer<typeof SandboxDetail>;

/** A sandbox's statuses once it has ended (the SDK's own local guard uses the same three). */
export const SANDBOX_ENDED: ReadonlySet<string> = new Set(["closed", "close-error", "error"]);

/** A memory snapshot: the answer to taking one, and the detail of one (`{ snapshot: {…} }` or flat). */
export const SnapshotAnswer = z.looseObject({
  snapshotId: lenient(z.string()),
  snapshotName: lenient(z.string()),
  imageName: lenient(z.string()),
  snapshot: lenient(z.looseObject({ imageName: lenient(z.string()) })),
});
