// The `[sales]` block: Tollgate selling over x402 (docs/sales.md). A client holding only a wallet pays the gateway for a
// sold row; the gateway serves it as the wallet's own tenant and pays the upstream as it does for any tenant. Off unless
// the block is present. Part of the config schema (./schema.ts).
import * as z from "zod";
import { agentPolicySchema, budgetSchema, quotaSchema, SCOPES } from "./tenant-schema.js";
import { caip2, evmAddress, usdAmount } from "./fields.js";

/** The route classes that can be sold, and the route-table rows each covers (src/sales/classes.ts). */
export const SALE_CLASSES = ["search", "fetch", "session", "sandbox", "jobs"] as const;
export type SaleClass = (typeof SALE_CLASSES)[number];

/**
 * What one call of a class costs a buyer. A fixed `price`, or the upstream's cost of the call with a markup: the credit
 * price of the class (`[prices]`: webSearch, webFetch; sessionMinute or sandboxMinute times `minutes` for sessions and
 * sandboxes, which are sold by time), times 1 + markupPercent/100, never below `floor`. Jobs (scrape, crawl, extract,
 * agent tasks, web crawl and batch fetch) are always sold `upto`: the buyer signs the job's reservation (its pages or
 * steps × their credit price) × the markup as a maximum, and is charged the credits the job used × the markup when it
 * ends (at least `floor`; nothing when it failed).
 */
export const salePriceSchema = z
  .strictObject({
    /** A fixed price per call in USD, e.g. "0.02"; when set, markupPercent and floor are not used. */
    price: usdAmount.optional(),
    /** The margin over the upstream's cost, in percent (0–1000). */
    markupPercent: z
      .number({ error: "expected a percentage like 20" })
      .min(0, { error: "expected a percentage from 0 to 1000" })
      .max(1000, { error: "expected a percentage from 0 to 1000" })
      .default(0),
    /** The least a call costs, in USD. */
    floor: usdAmount.default("0"),
    /**
     * How a buyer pays: "exact", the whole price at the purchase; "upto" (sessions and sandboxes), the buyer signs the
     * whole window as a maximum and is charged for the minutes used, at the stop or the window's end (x402 `upto`,
     * Permit2; `exact` is offered beside it for clients without `upto`).
     */
    scheme: z.enum(["exact", "upto"], { error: 'expected "exact" or "upto"' }).default("exact"),
    /**
     * Sessions and sandboxes: the minutes one purchase buys (its timeout). Jobs: how long a job is followed before it
     * is settled anyway (default 60; the buyer's authorization outlives it by five minutes).
     */
    minutes: z.number({ error: "expected a number of minutes" }).int().positive().max(1440).optional(),
  })
  .refine((p) => p.price === undefined || Number(p.price) > 0, { error: "expected a price above zero", path: ["price"] });

/** An asset accepted in payment: an EIP-3009 token on a network, named as its EIP-712 domain names it. */
export const saleAssetSchema = z.strictObject({
  network: caip2,
  /** The token's contract address. */
  asset: evmAddress,
  /** The token's EIP-712 domain name and version (USDC on Base: "USD Coin" / "2"). */
  name: z.string({ error: "expected the token's EIP-712 name" }).min(1),
  version: z.string({ error: "expected the token's EIP-712 version" }).min(1),
  /** The token's decimals (USDC: 6). */
  decimals: z.number({ error: "expected a number of decimals" }).int().min(0).max(36).default(6),
  /** The network's x402 v1 name (e.g. "base-sepolia"), for v1 clients; v1 is not offered without it. */
  v1Network: z.string().min(1).optional(),
});

/** What a wallet buyer's tenant is made with on its first purchase (like a tenant written in the config file). */
export const buyerTemplateSchema = z
  .strictObject({
    scopes: z
      .array(z.enum(SCOPES, { error: `expected one of ${SCOPES.join(", ")}` }))
      .refine((s) => !s.includes("admin") && !s.includes("operator-readonly"), {
        error: "a wallet buyer cannot be given an operator scope",
      })
      .default(["search", "sessions", "sandboxes"]),
    /** Budget windows per wallet: what the gateway may spend upstream for it. */
    budget: budgetSchema.default({ daily: "5.00" }),
    quotas: quotaSchema.default({ maxSandboxes: 2, maxSessions: 2 }),
    /** What a buyer's agents may do, within the operator's `policy`. */
    policy: agentPolicySchema.optional(),
  })
  .default({ scopes: ["search", "sessions", "sandboxes"], budget: { daily: "5.00" }, quotas: { maxSandboxes: 2, maxSessions: 2 } });

export const salesSchema = z.strictObject({
  /** Turn selling off while keeping the block. */
  enabled: z.boolean().default(true),
  /** Who is paid: unset, the gateway's own wallet (TOLLGATE_WALLET_KEY's address). */
  payTo: evmAddress.optional(),
  /** The x402 facilitator that verifies and settles buyers' payments (its /verify, /settle, /supported). */
  facilitator: z
    .string({ error: 'expected a facilitator URL like "https://x402.org/facilitator"' })
    .refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), {
      error: 'expected a facilitator URL like "https://x402.org/facilitator"',
    }),
  /** The assets accepted, each on its network; the first is offered first. */
  accept: z.array(saleAssetSchema).min(1, { error: "expected at least one [[sales.accept]] asset" }),
  /** How long a buyer's signed authorization must stay valid (the offer's maxTimeoutSeconds). */
  maxTimeoutSeconds: z.number({ error: "expected a number of seconds" }).int().min(10).max(3600).default(120),
  /** The classes sold and their prices; a class not named here is not sold. */
  prices: z
    .strictObject(
      Object.fromEntries(SALE_CLASSES.map((k) => [k, salePriceSchema.optional()])) as {
        [K in SaleClass]: z.ZodOptional<typeof salePriceSchema>;
      },
    )
    .refine((p) => Object.values(p).some(Boolean), { error: "expected at least one priced class (search, fetch, session, sandbox, jobs)" })
    .superRefine((p, ctx) => {
      for (const cls of ["search", "fetch"] as const)
        if (p[cls]?.scheme === "upto")
          ctx.addIssue({
            code: "custom",
            path: [cls, "scheme"],
            message: `"upto" sells by time: expected "exact" for ${cls} (sessions and sandboxes may be "upto")`,
          });
      if (p.jobs?.price !== undefined)
        ctx.addIssue({
          code: "custom",
          path: ["jobs", "price"],
          message: "jobs are charged for the credits they use: expected markupPercent and floor, not a fixed price",
        });
    }),
  /** The tenant a wallet buyer gets on its first purchase. */
  buyer: buyerTemplateSchema,
  /**
   * Sell over MCP too: a keyless caller of /mcp is a buyer (tools listed free; web_search and web_fetch, when search or
   * fetch is priced, paid per call through `_meta["x402/payment"]`) instead of being sent to OAuth with a 401.
   */
  mcp: z.boolean({ error: "expected true or false" }).default(false),
});

export type SalesConfig = z.infer<typeof salesSchema>;
export type SalePrice = z.infer<typeof salePriceSchema>;
export type SaleAsset = z.infer<typeof saleAssetSchema>;
