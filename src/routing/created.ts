// Creation answers: what a create call (sandbox, session, credit-billed job) names: `id`, or `jobId` for jobs, the job's
// status, and when a paid session ends.
import * as z from "zod";
import { lenient } from "./upstream-records.js";

export const CreatedAnswer = z.looseObject({
  id: lenient(z.union([z.string(), z.number()])),
  jobId: lenient(z.union([z.string(), z.number()])),
  status: lenient(z.string()),
  /** Volumes are addressed by name too. */
  name: lenient(z.string()),
  expiresAt: lenient(z.string()),
});
export type CreatedAnswer = z.infer<typeof CreatedAnswer>;
