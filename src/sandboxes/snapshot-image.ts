// The image a sandbox snapshot was taken from: a sandbox started from a snapshot runs it, so the quota's and the agent
// policy's image lists check it (middleware/quota, src/agent-policy/engine.ts).
import type { Context } from "hono";
import type { GatewayServices } from "../services.js";
import { upstreamJson } from "../upstream/upstream.js";
import { SnapshotAnswer } from "./wire.js";

/** The snapshot's image, asked of the upstream; undefined for an unknown snapshot (left to the upstream's 404). */
export async function imageOfSnapshot(c: Context, services: Pick<GatewayServices, "upstream">, name: unknown): Promise<string | undefined> {
  if (typeof name !== "string" || !name) return undefined;
  const res = await services.upstream.call(c, { method: "GET", path: `/api/snapshots/${encodeURIComponent(name)}` });
  if (!res.ok) {
    await res.body?.cancel();
    return undefined;
  }
  const body = await upstreamJson(res, SnapshotAnswer);
  const image = body.snapshot?.imageName ?? body.imageName;
  return typeof image === "string" ? image : undefined;
}
