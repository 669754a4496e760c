// The answer to an id that is not the caller's: another tenant's id (or one nobody here created) answers exactly like a
// missing one, wherever it was named (the path, for the owner step; a body field, for the body step).
import { GatewayError } from "../errors.js";
import type { ResourceKind } from "../state/types.js";

const NOUN: Record<ResourceKind, string> = {
  sandbox: "Sandbox",
  session: "Session",
  snapshot: "Snapshot",
  volume: "Volume",
  profile: "Profile",
  extension: "Extension",
  job: "Job",
  task: "Task",
};

/** Another tenant's id (or one nobody here created) answers exactly like a missing one, wherever it was named. */
export const notOwned = (kind: ResourceKind, id: string, field?: string) =>
  new GatewayError(404, "not_found", `${NOUN[kind]} ${id} not found`, field ? { field } : {});
