// Several upstream accounts behind one gateway (docs/accounts.md): `[[upstream.accounts]]`, each with its own API key
// (from an environment variable or, on Node, a file), concurrency limits and weight; tenants may be pinned to some.
import * as z from "zod";
import { remoteSigner } from "./fields.js";

const ACCOUNT_ID = /^[a-z0-9][a-z0-9_-]{0,62}$/;

export const accountId = z
  .string({ error: "expected an account id" })
  .regex(ACCOUNT_ID, { error: "expected a lowercase account id of letters, digits, '-' or '_'" });

export const upstreamAccountSchema = z
  .strictObject({
    /** Names the account in tenants' `accounts`, metrics, readiness, the ledger and the usage export. */
    id: accountId,
    /** The environment variable (a secret binding on Workers) holding this account's API key… */
    apiKeyEnv: z
      .string({ error: 'expected an environment variable name like "TOLLGATE_UPSTREAM_KEY_EU"' })
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected an environment variable name like "TOLLGATE_UPSTREAM_KEY_EU"' })
      .optional(),
    /** …or a file holding it (Node: Kubernetes/Docker secrets). Exactly one of the two. */
    apiKeyFile: z.string({ error: "expected a file path" }).min(1).optional(),
    /**
     * The account's own wallet (docs/accounts.md#wallets), optional: the environment variable holding its key (0x + 64
     * hex; a secret binding on Workers)… x402 calls made for tenants pinned to this account are paid from it.
     */
    walletKeyEnv: z
      .string({ error: 'expected an environment variable name like "TOLLGATE_WALLET_KEY_EU"' })
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'expected an environment variable name like "TOLLGATE_WALLET_KEY_EU"' })
      .optional(),
    /** …or a file holding it (Node). At most one of the two; neither: the gateway's wallet pays. */
    walletKeyFile: z.string({ error: "expected a file path" }).min(1).optional(),
    /**
     * …or the account's wallet in a `tollgate signer serve` of its own (Node; docs/signers.md): its Unix socket, or its
     * https URL with the gateway's client certificate, as `[wallet.remote]`. The gateway then holds no key for it.
     */
    walletSigner: remoteSigner({ socket: "/run/tollgate/signer-eu.sock", url: "https://signer-eu.internal:8443" }).optional(),
    /** The account's concurrency limits (its plan's): placement keeps new sessions and sandboxes under them. */
    limits: z
      .strictObject({
        sessions: z.number({ error: "expected a whole number of sessions" }).int().nonnegative().optional(),
        sandboxes: z.number({ error: "expected a whole number of sandboxes" }).int().nonnegative().optional(),
      })
      .default({}),
    /** Share of new work the account takes among those a tenant may use (0: only when the others cannot). */
    weight: z.number({ error: "expected a weight like 1" }).int().min(0).max(1000).default(1),
  })
  .refine((a) => !!a.apiKeyEnv !== !!a.apiKeyFile, {
    error: 'expected one of apiKeyEnv = "VARIABLE" or apiKeyFile = "/path" (exactly one)',
    path: ["apiKeyEnv"],
  })
  .refine((a) => [a.walletKeyEnv, a.walletKeyFile, a.walletSigner].filter(Boolean).length <= 1, {
    error: 'expected at most one of walletKeyEnv = "VARIABLE", walletKeyFile = "/path" or walletSigner = { socket = "/path" }',
    path: ["walletKeyEnv"],
  });

/** Each account's circuit breaker (with [[upstream.accounts]]): what opens it, and how long it stays open. */
export const breakerSchema = z
  .strictObject({
    /** Failures (5xx answers, no answer, answers slower than slowMs) among the last `window` calls that open it. */
    failures: z.number().int().min(1).max(1000).default(5),
    window: z.number().int().min(1).max(1000).default(20),
    /** An answer slower than this (to its headers) counts as a failure. */
    slowMs: z.number().int().positive().max(600_000).default(10_000),
    /** How long it stays open before one probe call is let through (half-open). */
    openSeconds: z.number().positive().max(3600).default(30),
    /** Safe calls (GETs) that got no answer or a 502/503/504 are retried this many times at most per request… */
    retries: z.number().int().min(0).max(5).default(2),
    /** …with this first backoff, doubled each time, within this budget per request. */
    retryBackoffMs: z.number().int().min(0).max(10_000).default(100),
    retryBudgetMs: z.number().int().min(0).max(60_000).default(2_000),
  })
  .default({ failures: 5, window: 20, slowMs: 10_000, openSeconds: 30, retries: 2, retryBackoffMs: 100, retryBudgetMs: 2_000 });

export type UpstreamAccountConfig = z.infer<typeof upstreamAccountSchema>;

/** Cross-field rules: unique account ids, and tenants pinned only to accounts that exist. */
export function accountProblems(
  cfg: { upstream: { accounts?: UpstreamAccountConfig[] }; tenants: Array<{ accounts?: string[] }> },
  add: (path: PropertyKey[], message: string) => void,
): void {
  const accounts = cfg.upstream.accounts;
  const seen = new Map<string, number>();
  accounts?.forEach((a, i) => {
    const prev = seen.get(a.id);
    if (prev !== undefined) add(["upstream", "accounts", i, "id"], `duplicate account id "${a.id}" (also upstream.accounts[${prev}])`);
    else seen.set(a.id, i);
  });
  cfg.tenants.forEach((t, i) => {
    t.accounts?.forEach((id, j) => {
      if (!accounts) add(["tenants", i, "accounts", j], `names account "${id}" but no [[upstream.accounts]] is configured`);
      else if (!seen.has(id))
        add(["tenants", i, "accounts", j], `unknown account "${id}" (expected one of ${[...seen.keys()].join(", ")})`);
    });
  });
}
