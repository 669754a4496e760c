// The `[state]` block: where shared state lives (memory, Redis in its three shapes, Durable Objects), with the message a
// wrong value gets. Part of the config schema (./schema.ts).
import * as z from "zod";

/** "host:port" of a Redis node or sentinel. */
const hostPort = z.string().regex(/^[^\s:/]+:\d{1,5}$/, { error: 'expected "host:port", e.g. "127.0.0.1:26379"' });

export const stateSchema = z
  .strictObject({
    backend: z.enum(["memory", "redis", "durable-objects"], { error: 'expected "memory", "redis" or "durable-objects"' }).default("memory"),
    redisUrl: z.string().optional(),
    /** Redis Sentinel: the sentinels ("host:port") and the name of the primary they watch (`sentinelName`). */
    sentinels: z.array(hostPort).optional(),
    sentinelName: z.string().min(1).optional(),
    /** Redis Cluster: some of its nodes ("host:port"); the rest are discovered. */
    clusterNodes: z.array(hostPort).optional(),
    /**
     * Redis Cluster: where the ledger's keys live. "tenant" (the default): each tenant's keys share its hash tag, so
     * the ledger spreads over the primaries; "shared": the previous layout, one hash slot for the whole ledger (kept
     * until `tollgate state migrate` has moved it; see docs/state-layout.md).
     */
    ledgerLayout: z.enum(["tenant", "shared"], { error: 'expected "tenant" or "shared"' }).optional(),
    /**
     * Redis Cluster: where resource ownership's keys live. "tenant" (the default): each resource's record on its own
     * slot and each tenant's lists under its hash tag, so ownership spreads over the primaries; "shared": the
     * previous layout, one hash slot ("{own}") for the whole fleet (kept until `tollgate state migrate` has moved it).
     */
    ownershipLayout: z.enum(["tenant", "shared"], { error: 'expected "tenant" or "shared"' }).optional(),
    /**
     * Money writes (ledger, idempotency keys) count as done only once this many replicas confirm them (Redis WAIT);
     * fewer in `confirmTimeoutMs` fails the call closed. Set 1 with Sentinel so a failover cannot lose a payment.
     */
    confirmReplicas: z.number().int().min(0).max(10).default(0),
    confirmTimeoutMs: z.number().int().positive().max(10_000).default(500),
    /** How long the owner of a resource that ended (stopped, expired, deleted, finished) is remembered. */
    endedRetentionDays: z.number().positive().max(3650).default(7),
    /**
     * With backend "memory": a rehearsal, said out loud. `tollgate start` refuses memory without it (spend, tenants made
     * through the API, keys and grants would be lost on a restart, and a budget start over), and shows it in its
     * summary and in /_tollgate/ready.
     */
    rehearsal: z.boolean().optional(),
  })
  .default({ backend: "memory", confirmReplicas: 0, confirmTimeoutMs: 500, endedRetentionDays: 7 })
  .refine((s) => s.backend !== "redis" || !!s.redisUrl || !!s.sentinels?.length || !!s.clusterNodes?.length, {
    error:
      'state.redisUrl: expected a URL like "redis://127.0.0.1:6379" (or state.sentinels with state.sentinelName, or state.clusterNodes) when backend is "redis"',
    path: ["redisUrl"],
  })
  .refine((s) => [s.redisUrl, s.sentinels, s.clusterNodes].filter((x) => x !== undefined).length <= 1, {
    error: "give one of redisUrl, sentinels or clusterNodes, not several",
    path: ["sentinels"],
  })
  .refine((s) => !s.rehearsal || s.backend === "memory", {
    error: 'state.rehearsal: only with backend = "memory" (a shared backend keeps its state: nothing to rehearse)',
    path: ["rehearsal"],
  })
  .refine((s) => !s.sentinels || !!s.sentinelName, {
    error: 'state.sentinelName: expected the name of the primary the sentinels monitor (e.g. "mymaster")',
    path: ["sentinelName"],
  });
