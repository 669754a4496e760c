// Creation answers: what a create call (sandbox, session, credit-billed job) names: `id`, or `jobId` for jobs, the job's
// status, and when a paid session ends. The answer is read once per request: the handler that reads it notes what it
// named on the context (noteCreated), and the chain's quota and meter steps take it from there (createdBy).
import type { Context } from "hono";
import * as z from "zod";
import { lenient, readWire } from "../platform/upstream-records.js";

const CreatedAnswer = z.looseObject({
  id: lenient(z.union([z.string(), z.number()])),
  jobId: lenient(z.union([z.string(), z.number()])),
  status: lenient(z.string()),
  /** Volumes are addressed by name too. */
  name: lenient(z.string()),
  expiresAt: lenient(z.string()),
});

/** What a creation's answer named, read once per request and shared by the chain's later steps (quota, meter). */
export interface Created {
  /** The created resource's id (`jobId`, else `id`), when the answer names one. */
  id?: string;
  /** When a paid (x402) session ends. */
  expiresAt?: string;
}

declare module "hono" {
  interface ContextVariableMap {
    /** Set by the handler that read the creation's answer (noteCreated), or by the first step to ask (createdBy). */
    created: Created;
  }
}

/** Notes what a creation answer, already parsed, names (the handler read it): the chain reads it from here, not again. */
export function noteCreated(c: Context, answer: unknown): Created {
  const a = readWire(CreatedAnswer, answer);
  const id = a.jobId ?? a.id;
  const created: Created = { id: typeof id === "string" || typeof id === "number" ? String(id) : undefined, expiresAt: a.expiresAt };
  c.set("created", created);
  return created;
}

/**
 * What the request's creation answer named: as its handler noted it, else (a handler that relayed the answer as it
 * came) read from the answer here, once, and kept for the next step to ask.
 */
export async function createdBy(c: Context): Promise<Created> {
  const known = c.get("created");
  if (known) return known;
  let answer: unknown;
  try {
    answer = await c.res.clone().json();
  } catch {
    answer = undefined;
  }
  return noteCreated(c, answer);
}
