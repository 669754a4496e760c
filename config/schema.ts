// The configuration file's schema: every option, its default, and the message a wrong value gets.
import * as z from "zod";

/** A USD amount such as "5.00" or "0.005" (at most 6 decimals, the precision of USDC). */
export const usdAmount = z
  .string({ error: 'expected a USD amount like "5.00"' })
  .regex(/^\d{1,12}(\.\d{1,6})?$/, { error: 'expected a USD amount like "5.00"' });

const isoDate = z
  .string({ error: 'expected an ISO-8601 date like "2027-01-31T00:00:00Z"' })
  .refine((s) => !Number.isNaN(Date.parse(s)), { error: 'expected an ISO-8601 date like "2027-01-31T00:00:00Z"' });

const origin = z
  .string({ error: 'expected an origin like "https://gateway.example.com"' })
  .refine((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === "http:" || u.protocol === "https:") && (u.pathname === "/" || u.pathname === "");
    } catch {
      return false;
    }
  }, { error: 'expected an origin like "https://gateway.example.com" (scheme and host, no path)' });

const caip2 = z.string().regex(/^[a-z0-9-]+:[A-Za-z0-9-]+$/, { error: 'expected a CAIP-2 network like "eip155:8453"' });
const evmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, { error: "expected a 0x-prefixed 20-byte hex address" });

export const SCOPES = ["search", "sessions", "sandboxes", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

export const tenantKeySchema = z.strictObject({
  /** `sha256:<64 hex>` of the key; the key itself is never stored. */
  hash: z.string().regex(/^sha256:[0-9a-f]{64}$/, { error: 'expected "sha256:<64 lowercase hex>" as printed by `tollgate keys create`' }),
  label: z.string().optional(),
  expiresAt: isoDate.optional(),
});

export const budgetSchema = z.strictObject({
  daily: usdAmount.optional(),
  monthly: usdAmount.optional(),
  total: usdAmount.optional(),
});

export const paymentPolicySchema = z.strictObject({
  networks: z.array(caip2).optional(),
  assets: z.array(evmAddress).optional(),
  payees: z.array(evmAddress).optional(),
  maxPerRequest: usdAmount.optional(),
  maxAuthorizationSeconds: z.number({ error: "expected a number of seconds" }).int().positive().max(86_400).optional(),
});

export const quotaSchema = z.strictObject({
  maxSandboxes: z.number().int().nonnegative().optional(),
  maxSessions: z.number().int().nonnegative().optional(),
  maxTimeoutMinutes: z.number().int().positive().optional(),
  images: z.array(z.string()).optional(),
  regions: z.array(z.string()).optional(),
  requestsPerMinute: z.number().int().positive().optional(),
});

export const tenantSchema = z.strictObject({
  id: z.string({ error: "expected a tenant id" }).regex(/^[a-z0-9][a-z0-9_-]{0,62}$/, { error: "expected a lowercase id of letters, digits, '-' or '_'" }),
  enabled: z.boolean().default(true),
  scopes: z.array(z.enum(SCOPES, { error: `expected one of ${SCOPES.join(", ")}` })).default(["search", "sessions", "sandboxes"]),
  keys: z.array(tenantKeySchema).min(1, { error: "expected at least one key (run `tollgate keys create --tenant ID`)" }),
  budget: budgetSchema.default({}),
  payment: paymentPolicySchema.default({}),
  /** Pass the client's own PAYMENT-SIGNATURE through and charge nothing to the tenant. */
  paysForItself: z.boolean().default(false),
  quotas: quotaSchema.default({}),
});

export const configSchema = z.strictObject({
  server: z
    .strictObject({
      host: z.string().default("127.0.0.1"),
      port: z.number({ error: "expected a port number" }).int().min(0).max(65535).default(8787),
      /** Origin clients reach the gateway at; exposed ports live at `<port>-<id>.<host of this origin>`. */
      publicOrigin: origin.optional(),
      /** Log level: "info" logs one line per request; "debug" adds upstream detail; "silent" none. */
      logLevel: z.enum(["silent", "error", "info", "debug"]).default("info"),
    })
    .default({ host: "127.0.0.1", port: 8787, logLevel: "info" }),
  upstream: z
    .strictObject({
      baseUrl: origin.default("https://api.hyperbrowser.ai"),
      /** Hosts (hostname or hostname:port) the gateway may follow upstream-provided URLs to (runtime, CDP). */
      allowedHosts: z.array(z.string()).default([]),
      timeoutMs: z.number().int().positive().default(30_000),
      /**
       * How exposed-port traffic reaches the upstream: "dns" connects to `<port>-<id>.<runtime host>` itself (production,
       * Workers), "host-header" connects to the runtime host and names the port host in `Host` (a local emulator, whose
       * wildcard names do not resolve); "auto" picks "host-header" for localhost and IP runtime hosts, else "dns".
       */
      exposedPorts: z.enum(["auto", "dns", "host-header"]).default("auto"),
    })
    .default({ baseUrl: "https://api.hyperbrowser.ai", allowedHosts: [], timeoutMs: 30_000, exposedPorts: "auto" }),
  payments: paymentPolicySchema
    .extend({
      enabled: z.boolean().default(true),
      /** JSON-RPC endpoint per network, used to settle uncertain payments from the chain's truth. */
      rpc: z.record(caip2, z.string().url({ error: 'expected an RPC URL like "https://mainnet.base.org"' })).default({}),
      /** How often held (uncertain) payments past their validBefore are reconciled with the chain. */
      reconcileIntervalSeconds: z.number().int().positive().default(30),
    })
    .default({ enabled: true, rpc: {}, reconcileIntervalSeconds: 30 }),
  cache: z
    .strictObject({
      enabled: z.boolean().default(true),
      scope: z.enum(["tenant", "shared"], { error: 'expected "tenant" or "shared"' }).default("tenant"),
      ttlSeconds: z.number().int().nonnegative().default(300),
      maxBytes: z.number().int().positive().default(64 * 1024 * 1024),
    })
    .default({ enabled: true, scope: "tenant", ttlSeconds: 300, maxBytes: 64 * 1024 * 1024 }),
  tokens: z
    .strictObject({
      /** Lifetime of the runtime/CDP tokens the gateway mints for clients. */
      ttlSeconds: z.number().int().positive().max(86_400).default(900),
    })
    .default({ ttlSeconds: 900 }),
  state: z
    .strictObject({
      backend: z.enum(["memory", "redis", "durable-objects"], { error: 'expected "memory", "redis" or "durable-objects"' }).default("memory"),
      redisUrl: z.string().optional(),
    })
    .default({ backend: "memory" })
    .refine((s) => s.backend !== "redis" || !!s.redisUrl, { error: 'state.redisUrl: expected a URL like "redis://127.0.0.1:6379" when backend is "redis"', path: ["redisUrl"] }),
  tenants: z.array(tenantSchema).default([]),
});

export type TollgateConfig = z.infer<typeof configSchema>;
export type TenantConfig = z.infer<typeof tenantSchema>;
export type PaymentPolicyConfig = z.infer<typeof paymentPolicySchema>;
