// [egress]: the route sandboxes send a tenant secret's requests through (`$TOLLGATE_EGRESS/NAME/<path>`,
// src/sandboxes/egress.ts): it swaps the placeholder for the secret's value towards the secret's hosts only.
import * as z from "zod";

export const egressSchema = z
  .strictObject({
    /**
     * Plain http to a loopback host (127.0.0.0/8, ::1, localhost) a secret names: for tests and the embedded default
     * only (its local test servers). Off: https only, and never to loopback, private or metadata addresses.
     */
    allowHttpLoopback: z.boolean().default(false),
    /** Requests through the egress per tenant and minute (429 rate_limited past it). */
    requestsPerMinute: z.number({ error: "expected a whole number of requests" }).int().positive().max(1_000_000).default(600),
    /** How long the destination has to start answering (headers), in ms; the body then streams for as long as it lasts. */
    timeoutMs: z.number({ error: "expected a number of milliseconds" }).int().min(100).max(600_000).default(60_000),
  })
  .default({ allowHttpLoopback: false, requestsPerMinute: 600, timeoutMs: 60_000 });
