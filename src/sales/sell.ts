// The sales step, in front of a sold row's chain (mounted by ./index.ts before the route table):
//   - a caller with a tenant key or a gateway token is not a buyer: the row's chain runs as before;
//   - no credential and no payment: 402, the x402 v2 PaymentRequired in PAYMENT-REQUIRED (the v1 shape in the body);
//   - a payment (PAYMENT-SIGNATURE, or X-PAYMENT from a v1 client): matched to the offer, verified by the facilitator,
//     then the row's chain runs as the buyer's wallet tenant (./wallet-tenants.ts: budgets, quotas, kill switch, the
//     ownership of what it creates); the payment is settled only when the upstream answered 2xx, and the answer
//     carries PAYMENT-RESPONSE. A refusal (a budget, a quota, the upstream's 5xx) settles nothing. A settlement that
//     fails withholds the answer (402 settlement_failed). A retry with the same payment-identifier gets the first
//     answer again and is not charged again.
import type { Context, MiddlewareHandler } from "hono";
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import type { FacilitatorClient } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { PaymentPayloadV1, PaymentRequirementsV1 } from "@x402/core/types/v1";
import type { SaleClass, SalesConfig } from "../../config/sales-schema.js";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { publicOriginOf } from "../web/public-origin.js";
import { MCP_SCOPES, type McpScope } from "../identity/tokens.js";
import { matchPayload, offerFor, type Offer, payerOf, paymentIdentifier, paymentRequired, paymentRequiredV1, settleSale } from "./offer.js";
import type { SalesBook } from "./book.js";
import type { WalletTenants } from "./wallet-tenants.js";
import { createdId, stopBought } from "./unwind.js";
import type { MeteredSales, UptoFacilitators } from "./metered.js";
import type { SiwxGate } from "./siwx.js";
import { perMinuteOf, soldMinutes } from "./price.js";
import { usdToAtomic } from "../payments/index.js";
import type { JobSales } from "./job-sales.js";
import { openJobSale } from "./job-open.js";
import { requestMaxCost } from "./job-offer.js";

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** How long a settled answer is replayed for the same payment-identifier. */
const REPLAY_MS = 24 * 3600_000;
/** How long a sale in progress holds its payment-identifier. */
const LEASE_MS = 5 * 60_000;
/** The answer header that hands a buyer its wallet token, and how long the token lives. */
const WALLET_TOKEN_HEADER = "x-tollgate-wallet-token";
const WALLET_TOKEN_SECONDS = 24 * 3600;

export interface SellParts {
  services: GatewayServices;
  sales: SalesConfig;
  payTo: `0x${string}`;
  facilitator: FacilitatorClient;
  wallets: WalletTenants;
  book: SalesBook;
  self: (req: Request, env: unknown) => Promise<Response>;
  /** `upto` sales by time: the facilitators' addresses to offer, and the sales pending until a stop (./metered.ts). */
  upto: UptoFacilitators;
  metered: MeteredSales;
  siwx: SiwxGate;
  /** Jobs sold by the credits they use, pending until they end (./job-sales.ts); absent when jobs are not sold. */
  jobs?: JobSales;
}

type AnyPayload = PaymentPayload | PaymentPayloadV1;

const hasCredential = (h: Headers) => h.has("x-api-key") || h.has("authorization");

export function sellStep(parts: SellParts, cls: SaleClass, rowName: string): MiddlewareHandler<GatewayEnv> {
  const { services, sales, payTo, facilitator, wallets, book, self } = parts;

  const price = sales.prices[cls]!;
  const byTime = price.scheme === "upto" && (cls === "session" || cls === "sandbox");
  const offerOf = async (c: Context<GatewayEnv>): Promise<Offer> => {
    const origin = publicOriginOf(c, services);
    const upto = byTime || cls === "jobs" ? await parts.upto.byNetwork() : {};
    // A job's maximum is its request's reservation (./job-offer.ts).
    const jobCost = cls === "jobs" ? await requestMaxCost(services, c, rowName) : 0n;
    return offerFor(services.config, sales, cls, `${origin}${new URL(c.req.url).pathname}`, payTo, upto, jobCost);
  };

  /** 402 with the offer: PAYMENT-REQUIRED (v2) and the v1 body, `{message, code}` beside it. */
  const required = async (c: Context<GatewayEnv>, offer: Offer, code: string, message: string, extra: Record<string, string> = {}) => {
    const headers = new Headers({
      "content-type": "application/json",
      "cache-control": "no-store",
      // A wallet that bought here may come back with sign-in-with-x (./siwx.ts): the challenge rides in every 402.
      "payment-required": encodePaymentRequiredHeader(paymentRequired(offer, message, await parts.siwx.declaration(c))),
      ...extra,
    });
    const body = { ...paymentRequiredV1(offer, message), message, code };
    c.get("logFields").code = code;
    return new Response(JSON.stringify(body), { status: 402, headers });
  };

  return async function sell(c, next) {
    const h = c.req.raw.headers;
    // A tenant's own call (its key or a gateway token; a tenant that pays for itself sends its payment beside its key).
    if (hasCredential(h)) return next();
    const signature = h.get("payment-signature") ?? h.get("x-payment");
    if (!signature) {
      const offer = await offerOf(c);
      return required(
        c,
        offer,
        "payment_required",
        `Pay ${offer.resource.description.toLowerCase()} with x402, or call with a tenant key.`,
      );
    }
    const v1 = !h.has("payment-signature");
    const offer = await offerOf(c);
    let payload: AnyPayload;
    try {
      payload = decodePaymentSignatureHeader(signature) as AnyPayload;
    } catch {
      return required(c, offer, "invalid_payment", "The payment header is not an x402 payment payload (base64 JSON).");
    }
    const requirements = matchPayload(offer, payload);
    if (!requirements)
      return required(
        c,
        offer,
        "payment_mismatch",
        "The payment does not answer this offer (scheme, network, asset, payee or amount differ).",
      );
    const payer = payerOf(payload);
    if (!payer) return required(c, offer, "invalid_payment", "The payment names no payer (an EIP-3009 authorization was expected).");

    // Verify: a signature the facilitator does not accept stops here, nothing run and nothing settled.
    let verified: { isValid: boolean; invalidReason?: string; invalidMessage?: string; payer?: string };
    try {
      verified = await facilitator.verify(payload as PaymentPayload, requirements as PaymentRequirements);
    } catch (err) {
      const data = (err as { invalidReason?: string; response?: { invalidReason?: string } }) ?? {};
      verified = { isValid: false, invalidReason: data.invalidReason ?? data.response?.invalidReason ?? "facilitator_unavailable" };
    }
    const id = paymentIdentifier(payload);
    const idemKey = id ? `sale:${id}` : undefined;
    const fingerprint = `${payer.toLowerCase()} ${c.req.method} ${rowName}`;
    if (idemKey) {
      // A retry of a sale already made: its answer again, if this payer signed this retry (a fresh authorization that
      // verifies, or the same one, now spent).
      const begun = await services.stores.idempotency.begin(idemKey, fingerprint, LEASE_MS);
      if (begun.state === "done") {
        const signedByPayer = verified.isValid || /nonce_already_used/.test(verified.invalidReason ?? "");
        if (begun.response.fingerprint !== fingerprint || !signedByPayer)
          throw new GatewayError(
            409,
            "payment_identifier_reused",
            "This payment-identifier was used by another payer or for another operation.",
          );
        c.get("logFields").code = "sale_replayed";
        return replay(begun.response);
      }
      if (begun.state === "pending")
        throw new GatewayError(409, "payment_in_progress", "A sale with this payment-identifier is in progress; retry in a moment.");
    }
    const settledNothing = async () => {
      if (idemKey) await services.stores.idempotency.abandon(idemKey);
    };
    if (!verified.isValid) {
      await settledNothing();
      return required(c, offer, "payment_invalid", `The facilitator refused the payment: ${verified.invalidReason ?? "invalid"}.`);
    }

    let caller: Awaited<ReturnType<WalletTenants["callerFor"]>>;
    try {
      caller = await wallets.callerFor(payer, c.get("requestId"));
    } catch (err) {
      await settledNothing();
      throw err;
    }
    c.set("soldCaller", caller);
    c.get("logFields").tenant = caller.tenant.id;
    const began = services.now();
    try {
      await next();
    } catch (err) {
      await settledNothing();
      throw err;
    }
    const res = c.res;
    if (res.status < 200 || res.status >= 300) {
      // Refused or failed (a budget, a quota, the upstream): nothing is settled, the buyer's authorization lapses.
      await settledNothing();
      c.res = undefined as unknown as Response;
      c.res = withHeaders(res, { "x-tollgate-sale": "not-charged" });
      return;
    }
    const body = await res.arrayBuffer();
    // Sold by time (`upto`): nothing is settled now; the sale settles for the minutes used at the stop or the window's
    // end (./metered.ts). Without an id to follow, it settles the whole window now, like `exact`.
    const meteredId = (requirements as PaymentRequirements).scheme === "upto" ? createdId(cls, body) : undefined;
    if (meteredId !== undefined && cls === "jobs" && parts.jobs)
      await openJobSale(parts.jobs, c, {
        id: meteredId,
        row: rowName,
        tenant: caller.tenant.id,
        payer,
        payTo,
        payload: payload as PaymentPayload,
        requirements: requirements as PaymentRequirements,
        paymentId: id,
        since: began,
      });
    else if (meteredId !== undefined) {
      const asset = sales.accept.find((a) => a.network === requirements.network && same(a.asset, requirements.asset))!;
      await parts.metered.open({
        kind: cls as "session" | "sandbox",
        id: meteredId,
        tenant: caller.tenant.id,
        payer,
        payTo,
        row: rowName,
        cls,
        startedAt: services.now(),
        minutes: soldMinutes(services.config, price),
        perMinuteMicroUsd: perMinuteOf(services.config, cls as "session" | "sandbox", price).toString(),
        floorMicroUsd: usdToAtomic(price.floor).toString(),
        decimals: asset.decimals,
        payload: payload as PaymentPayload,
        requirements: requirements as PaymentRequirements,
        requestId: c.get("requestId"),
        paymentId: id,
      });
    }
    const settled: SettleResponse =
      meteredId !== undefined
        ? { success: true, transaction: "", network: requirements.network as SettleResponse["network"], payer, amount: "0" }
        : await settleSale(facilitator, payload as PaymentPayload, requirements as PaymentRequirements);
    const receiptHeader = v1 ? "x-payment-response" : "payment-response";
    if (!settled.success) {
      await settledNothing();
      services.logger.error("sale not settled", {
        requestId: c.get("requestId"),
        tenant: caller.tenant.id,
        row: rowName,
        reason: settled.errorReason,
      });
      // What the upstream created for this unpaid sale is stopped before the buyer hears (./unwind.ts).
      const created = createdId(cls, body);
      const stopped =
        created !== undefined &&
        (await stopBought(services, (req) => self(req, c.env), {
          rowName,
          id: created,
          caller,
          requestId: c.get("requestId"),
          origin: new URL(c.req.url).origin,
        }));
      const what =
        created === undefined
          ? ""
          : stopped
            ? ` The ${cls} ${created} was stopped.`
            : ` The ${cls} ${created} could not be stopped yet; it ends at its timeout.`;
      c.res = undefined as unknown as Response;
      c.res = await required(
        c,
        offer,
        "settlement_failed",
        `The payment could not be settled (${settled.errorReason ?? "unknown"}); the answer is withheld and nothing was charged.${what}`,
        {
          [receiptHeader]: encodePaymentResponseHeader(settled),
          ...(stopped ? { "x-tollgate-sale-stopped": created } : {}),
        },
      );
      return;
    }
    const amount = (requirements as PaymentRequirements).amount ?? (requirements as PaymentRequirementsV1).maxAmountRequired;
    if (meteredId === undefined)
      await book.record({
        at: services.now(),
        tenant: caller.tenant.id,
        payer: settled.payer ?? payer,
        payTo,
        row: rowName,
        class: cls,
        // A v1 payment names its network the v1 way ("base-sepolia"): the book keeps the CAIP-2 name the RPCs are keyed by.
        network: sales.accept.find((a) => a.v1Network === requirements.network)?.network ?? requirements.network,
        asset: requirements.asset,
        amount,
        priceMicroUsd: offer.priceMicroUsd.toString(),
        transaction: settled.transaction,
        requestId: c.get("requestId"),
        paymentId: id,
      });
    const headers = new Headers(res.headers);
    headers.delete("content-length");
    if (meteredId === undefined) {
      headers.set(receiptHeader, encodePaymentResponseHeader(settled));
      headers.set("x-tollgate-sale", "charged");
    } else {
      // Metered: the receipt comes with the stop's answer; the most it can cost is what was signed.
      headers.set("x-tollgate-sale", "metered");
      headers.set("x-tollgate-sale-max", amount);
    }
    // The wallet's way back to what it bought: a gateway token for its tenant that reads, uses and stops what it owns
    // (the key rows of its scopes) but spends nothing (cap 0): every further purchase is paid.
    const walletToken = await services.tokens.mint({
      tenant: caller.tenant.id,
      kind: "mcp",
      scopes: caller.tenant.scopes.filter((x): x is McpScope => (MCP_SCOPES as readonly string[]).includes(x)),
      cap: 0n,
      keyless: true,
      ttlSeconds: WALLET_TOKEN_SECONDS,
    });
    headers.set(WALLET_TOKEN_HEADER, walletToken.token);
    headers.set(`${WALLET_TOKEN_HEADER}-expires`, walletToken.expiresAt);
    headers.set(
      "access-control-expose-headers",
      `${receiptHeader}, x-tollgate-sale, x-tollgate-sale-max, ${WALLET_TOKEN_HEADER}, ${WALLET_TOKEN_HEADER}-expires`,
    );
    if (idemKey) {
      const stored: Record<string, string> = {};
      headers.forEach((v, k) => {
        stored[k] = v;
      });
      await services.stores.idempotency.complete(
        idemKey,
        { status: res.status, headers: stored, body: toBase64(body), fingerprint },
        REPLAY_MS,
      );
    }
    c.res = undefined as unknown as Response;
    c.res = new Response(body, { status: res.status, statusText: res.statusText, headers });
  };
}

function withHeaders(res: Response, extra: Record<string, string>): Response {
  const headers = new Headers(res.headers);
  for (const [k, v] of Object.entries(extra)) headers.set(k, v);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
}

function replay(stored: { status: number; headers: Record<string, string>; body: string }): Response {
  const headers = new Headers(stored.headers);
  headers.set("x-tollgate-sale", "replayed");
  return new Response(fromBase64(stored.body), { status: stored.status, headers });
}

function toBase64(buf: ArrayBuffer): string {
  let bin = "";
  const bytes = new Uint8Array(buf);
  for (let i = 0; i < bytes.length; i += 0x8000) bin += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(bin);
}

function fromBase64(b64: string): Uint8Array<ArrayBuffer> {
  const bin = atob(b64);
  const out = new Uint8Array(new ArrayBuffer(bin.length));
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}
