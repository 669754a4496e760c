// The gateway's own 402: an x402 v2 PaymentRequired (the PAYMENT-REQUIRED header) naming the gateway as the seller,
// with the v1 shape in the body for v1 clients (x402-fetch), and how a buyer's signed payload is matched back to what
// was offered. Only `exact` (EIP-3009) is offered: a fixed price per call.
import type { PaymentPayload, PaymentRequired, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayloadV1, PaymentRequirementsV1 } from "@x402/core/types/v1";
import type { SaleAsset, SaleClass, SalesConfig } from "../../config/sales-schema.js";
import type { TollgateConfig } from "../../config/schema.js";
import { CLASS_DESCRIPTION } from "./classes.js";
import { UPTO_SLACK_SECONDS } from "./metered.js";
import { inAssetUnits, marked, priceOf, soldMinutes } from "./price.js";
import { jobMinutes } from "./job-offer.js";

const PAYMENT_IDENTIFIER = "payment-identifier";
/** The Bazaar discovery extension's key (x402 v2 `extensions.bazaar`: how to call the resource, for catalogs). */
const BAZAAR = "bazaar";

/** What each class's request body looks like: an example and its JSON schema (the Bazaar's `input`). */
const CLASS_INPUT: Record<SaleClass, { body: Record<string, unknown>; schema: Record<string, unknown> }> = {
  search: {
    body: { query: "edge caching" },
    schema: { type: "object", properties: { query: { type: "string" }, page: { type: "integer" } }, required: ["query"] },
  },
  fetch: { body: { url: "https://example.com/" }, schema: { type: "object", properties: { url: { type: "string" } }, required: ["url"] } },
  session: { body: {}, schema: { type: "object", properties: { timeoutMinutes: { type: "integer" } } } },
  jobs: {
    body: { url: "https://example.com/" },
    schema: {
      type: "object",
      properties: {
        url: { type: "string" },
        urls: { type: "array", items: { type: "string" } },
        maxPages: { type: "integer" },
        task: { type: "string" },
      },
    },
  },
  sandbox: {
    body: { imageName: "node" },
    schema: { type: "object", properties: { imageName: { type: "string" }, timeoutMinutes: { type: "integer" } } },
  },
};

/** The Bazaar discovery extension for a class sold by POST: the input (an example body) and its schema. */
export function bazaarExtension(cls: SaleClass) {
  const input = CLASS_INPUT[cls];
  return {
    info: { input: { type: "http", method: "POST", bodyType: "json", body: input.body }, output: { type: "json" } },
    schema: {
      $schema: "https://json-schema.org/draft/2020-12/schema",
      type: "object",
      properties: {
        input: {
          type: "object",
          properties: {
            type: { type: "string", const: "http" },
            method: { type: "string", enum: ["POST"] },
            bodyType: { type: "string", enum: ["json"] },
            body: input.schema,
          },
          required: ["type", "method", "bodyType"],
          additionalProperties: false,
        },
        output: { type: "object" },
      },
      required: ["input"],
    },
  };
}

export interface Offer {
  cls: SaleClass;
  /** The price in micro-USD (6 decimals). */
  priceMicroUsd: bigint;
  v2: PaymentRequirements[];
  v1: PaymentRequirementsV1[];
  resource: { url: string; description: string; mimeType: string };
}

/**
 * What `cls` sells for at `url`, in each accepted asset, paid to `payTo`. A session or sandbox priced `scheme = "upto"`
 * is offered as `upto` first (its whole window as the maximum, Permit2, naming the facilitator `uptoFacilitators` lists
 * for the network), then as `exact` for clients without `upto`.
 */
export function offerFor(
  config: TollgateConfig,
  sales: SalesConfig,
  cls: SaleClass,
  url: string,
  payTo: `0x${string}`,
  uptoFacilitators: Record<string, `0x${string}`> = {},
  jobCostMicroUsd = 0n,
): Offer {
  const price = sales.prices[cls]!;
  // A job is offered `upto` only, its maximum the request's reservation × the markup (`jobCostMicroUsd`: ./job-offer.ts).
  const jobs = cls === "jobs";
  const priceMicroUsd = jobs ? marked(jobCostMicroUsd, price) : priceOf(config, cls, price);
  const description = CLASS_DESCRIPTION[cls];
  const minutes = jobs ? jobMinutes(price.minutes) : soldMinutes(config, price);
  const upto =
    jobs || (price.scheme === "upto" && (cls === "session" || cls === "sandbox"))
      ? sales.accept
          .filter((a) => uptoFacilitators[a.network])
          .map(
            (a): PaymentRequirements => ({
              scheme: "upto",
              network: a.network as PaymentRequirements["network"],
              amount: inAssetUnits(priceMicroUsd, a).toString(),
              asset: a.asset,
              payTo,
              maxTimeoutSeconds: minutes * 60 + UPTO_SLACK_SECONDS,
              extra: { name: a.name, version: a.version, assetTransferMethod: "permit2", facilitatorAddress: uptoFacilitators[a.network] },
            }),
          )
      : [];
  const exact = (jobs ? [] : sales.accept).map(
    (a): PaymentRequirements => ({
      scheme: "exact",
      network: a.network as PaymentRequirements["network"],
      amount: inAssetUnits(priceMicroUsd, a).toString(),
      asset: a.asset,
      payTo,
      maxTimeoutSeconds: sales.maxTimeoutSeconds,
      extra: { name: a.name, version: a.version },
    }),
  );
  const v2 = [...upto, ...exact];
  const v1 = (jobs ? [] : sales.accept)
    .filter((a): a is SaleAsset & { v1Network: string } => a.v1Network !== undefined)
    .map(
      (a): PaymentRequirementsV1 => ({
        scheme: "exact",
        network: a.v1Network as PaymentRequirementsV1["network"],
        maxAmountRequired: inAssetUnits(priceMicroUsd, a).toString(),
        resource: url,
        description,
        mimeType: "application/json",
        outputSchema: {},
        payTo,
        maxTimeoutSeconds: sales.maxTimeoutSeconds,
        asset: a.asset,
        extra: { name: a.name, version: a.version },
      }),
    );
  return { cls, priceMicroUsd, v2, v1, resource: { url, description, mimeType: "application/json" } };
}

/** The v2 PaymentRequired (for the header), declaring the payment-identifier extension (retries charged once). */
export function paymentRequired(offer: Offer, error: string, more: Record<string, unknown> = {}): PaymentRequired {
  return {
    x402Version: 2,
    error,
    resource: offer.resource,
    accepts: offer.v2,
    extensions: {
      ...more,
      [BAZAAR]: bazaarExtension(offer.cls),
      [PAYMENT_IDENTIFIER]: {
        info: { required: false },
        schema: {
          $schema: "https://json-schema.org/draft/2020-12/schema",
          type: "object",
          properties: { required: { type: "boolean" }, id: { type: "string", minLength: 16, maxLength: 128, pattern: "^[a-zA-Z0-9_-]+$" } },
          required: ["required"],
        },
      },
    },
  };
}

/** The v1 body (x402-fetch reads the 402's JSON body). */
export function paymentRequiredV1(offer: Offer, error: string) {
  return { x402Version: 1, error, accepts: offer.v1 };
}

const same = (a: unknown, b: unknown) => typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();

/**
 * The offered requirements a buyer's payload answers, or undefined: v2 by its `accepted` entry (scheme, network, asset,
 * payee and amount all as offered), v1 by its scheme and network.
 */
export function matchPayload(
  offer: Offer,
  payload: PaymentPayload | PaymentPayloadV1,
): PaymentRequirements | PaymentRequirementsV1 | undefined {
  if (payload.x402Version === 1) {
    const p = payload as PaymentPayloadV1;
    return offer.v1.find((r) => r.scheme === p.scheme && r.network === p.network);
  }
  const accepted = (payload as PaymentPayload).accepted;
  if (!accepted) return undefined;
  return offer.v2.find(
    (r) =>
      r.scheme === accepted.scheme &&
      r.network === accepted.network &&
      same(r.asset, accepted.asset) &&
      same(r.payTo, accepted.payTo) &&
      r.amount === accepted.amount,
  );
}

/** The payment-identifier a buyer named for this payment (x402 extension `payment-identifier`), when valid. */
export function paymentIdentifier(payload: PaymentPayload | PaymentPayloadV1): string | undefined {
  const ext = (payload as PaymentPayload).extensions?.[PAYMENT_IDENTIFIER] as { info?: { id?: unknown } } | undefined;
  const id = ext?.info?.id;
  return typeof id === "string" && /^[a-zA-Z0-9_-]{16,128}$/.test(id) ? id : undefined;
}

/** The buyer's address as its signed authorization names it (EIP-3009 `from`, or the Permit2 authorization's `from`). */
export function payerOf(payload: PaymentPayload | PaymentPayloadV1): `0x${string}` | undefined {
  const signed = payload.payload as { authorization?: { from?: unknown }; permit2Authorization?: { from?: unknown } } | undefined;
  const from = signed?.authorization?.from ?? signed?.permit2Authorization?.from;
  return typeof from === "string" && /^0x[0-9a-fA-F]{40}$/.test(from) ? (from as `0x${string}`) : undefined;
}

/**
 * The facilitator's settlement, its failure to answer read as a failed settlement (`facilitator_unavailable`), so the
 * caller has one answer to act on: settled, or nothing was charged.
 */
export async function settleSale(
  facilitator: FacilitatorClient,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
): Promise<SettleResponse> {
  try {
    return await facilitator.settle(payload, requirements);
  } catch (err) {
    return {
      success: false,
      errorReason: "facilitator_unavailable",
      errorMessage: String((err as Error)?.message ?? err),
      transaction: "",
      network: requirements.network as SettleResponse["network"],
    } as SettleResponse;
  }
}
