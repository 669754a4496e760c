// Charges one request over x402: 402 challenge, then verify → run the work → settle → answer, v2 and v1 alike.
import type { Context } from "hono";
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader, encodePaymentResponseHeader } from "@x402/core/http";
import type { PaymentPayload, PaymentRequirements, SettleResponse } from "@x402/core/types";
import type { PaymentPayloadV1, PaymentRequirementsV1 } from "@x402/core/types/v1";
import type { ChainHandle, EmulatorContext } from "../types.js";
import type { LocalFacilitator } from "./facilitator.js";
import {
  PAYMENT_IDENTIFIER,
  paymentIdentifierDeclaration,
  paymentIdOf,
  SOLANA_DEVNET,
  SOLANA_DEVNET_USDC,
  type X402Demand,
} from "./schemes.js";

/** What paid work returns. `charge: false` (a failed job) answers without settling: nothing delivered, nothing paid. */
export interface WorkResult {
  status: number;
  body: unknown;
  charge: boolean;
  /** Called when settlement fails after the work was done (e.g. stop the session that was started). */
  undo?: () => Promise<void>;
}

export interface ChargeOptions {
  amount: bigint;
  description: string;
  run: (payment: { payer: `0x${string}` }) => Promise<WorkResult>;
}

/** Request header a client sends to be served as an x402 v1-only server would (no PAYMENT-REQUIRED header). */
export const V1_ONLY_HEADER = "x402-version";

type AnyPayload = PaymentPayload | PaymentPayloadV1;

export interface PaywallOptions {
  ctx: EmulatorContext;
  chain: ChainHandle;
  local: LocalFacilitator;
  maxTimeoutSeconds: number;
  /** What each route demands and how settlements behave (./schemes.ts); read on every request. */
  demand: X402Demand;
}

/** A paid answer kept under its payment id: a retry of the same payment gets it again, not a second charge. */
interface KeptAnswer {
  header: string;
  response: { status: number; headers: Record<string, string>; body: string };
}

export class Paywall {
  /** Authorizations being verified, worked on or settled right now: a concurrent replay is refused at once. */
  private readonly inFlight = new Set<string>();
  /** Paid answers by payment id (payment-identifier extension), the newest 10,000. */
  private readonly byPaymentId = new Map<string, KeptAnswer>();

  constructor(private readonly opts: PaywallOptions) {}

  async charge(c: Context, o: ChargeOptions): Promise<Response> {
    const { chain, local, ctx } = this.opts;
    const url = new URL(c.req.path, ctx.controlOrigin() || c.req.url).toString();
    const resource = { url, description: o.description, mimeType: "application/json" };
    const mode = this.opts.demand.schemes[c.req.path] ?? "exact";
    const tokenExtra = { name: chain.token.name, version: chain.token.version };
    const [v2] =
      mode === "solana"
        ? [
            {
              scheme: "exact",
              network: SOLANA_DEVNET,
              amount: o.amount.toString(),
              asset: SOLANA_DEVNET_USDC,
              payTo: "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4",
              maxTimeoutSeconds: this.opts.maxTimeoutSeconds,
              extra: { feePayer: "2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4" },
            } as PaymentRequirements,
          ]
        : await local.resourceServer.buildPaymentRequirements({
            scheme: mode === "upto" ? "upto" : "exact",
            network: chain.network,
            payTo: chain.payee,
            price: {
              amount: o.amount.toString(),
              asset: chain.token.address,
              extra: mode === "exact" ? tokenExtra : { ...tokenExtra, assetTransferMethod: "permit2" },
            },
            maxTimeoutSeconds: this.opts.maxTimeoutSeconds,
          });
    // v1 knows only exact over EIP-3009: the other modes are offered in v2 alone.
    const v1: PaymentRequirementsV1 | undefined =
      local.v1Network && mode === "exact"
        ? {
            scheme: "exact",
            network: local.v1Network as PaymentRequirementsV1["network"],
            maxAmountRequired: o.amount.toString(),
            resource: url,
            description: o.description,
            mimeType: "application/json",
            outputSchema: {},
            payTo: chain.payee,
            maxTimeoutSeconds: this.opts.maxTimeoutSeconds,
            asset: chain.token.address,
            extra: { name: chain.token.name, version: chain.token.version },
          }
        : undefined;
    const v1Only = c.req.header(V1_ONLY_HEADER) === "1" && !!v1;

    const challenge = async (code: string, message: string, error: string, extraHeaders: Record<string, string> = {}) => {
      const headers: Record<string, string> = { "content-type": "application/json", "cache-control": "no-store", ...extraHeaders };
      if (!v1Only) {
        const pr = await local.resourceServer.createPaymentRequiredResponse([v2], resource, error, {
          [PAYMENT_IDENTIFIER]: paymentIdentifierDeclaration,
        });
        headers["PAYMENT-REQUIRED"] = encodePaymentRequiredHeader(pr);
      }
      // The body carries the v1 challenge so v1 clients (which read the body) can pay; v2 clients read the header.
      const body = v1
        ? { message, code, x402Version: 1, error, accepts: [v1] }
        : { message, code, x402Version: 2, error, resource, accepts: [v2] };
      return new Response(JSON.stringify(body), { status: 402, headers });
    };

    const header = c.req.header("payment-signature") ?? c.req.header("x-payment");
    if (!header)
      return challenge("payment_required", `Payment required: ${o.amount} atomic units of ${chain.token.symbol}`, "Payment required");

    let payload: AnyPayload;
    try {
      payload = decodePaymentSignatureHeader(header) as AnyPayload;
    } catch {
      return challenge("invalid_payment_header", "The payment header is not base64-encoded JSON", "invalid_payment_header");
    }

    let requirements: PaymentRequirements | PaymentRequirementsV1 | undefined;
    if (payload?.x402Version === 2) {
      requirements = local.resourceServer.findMatchingRequirements([v2], payload as PaymentPayload);
    } else if (payload?.x402Version === 1 && v1) {
      const p = payload as PaymentPayloadV1;
      requirements = p.scheme === v1.scheme && p.network === v1.network ? v1 : undefined;
    }
    if (!requirements) {
      return challenge(
        "no_matching_payment_requirements",
        "The payment does not match what this request costs (scheme, network, asset, amount or payee); pay the offered requirements",
        "No matching payment requirements",
      );
    }

    const inner = payload.payload as {
      authorization?: { from?: string; nonce?: string };
      permit2Authorization?: { from?: string; nonce?: string };
    };
    const auth = inner?.authorization ?? inner?.permit2Authorization;
    const key = auth?.from && auth?.nonce ? `${auth.from.toLowerCase()}:${String(auth.nonce).toLowerCase()}` : header;
    // payment-identifier: the same payment sent again (its answer was lost) gets the answer it paid for, once charged.
    const paymentId = payload.x402Version === 2 ? paymentIdOf(payload) : undefined;
    const kept = paymentId ? this.byPaymentId.get(paymentId) : undefined;
    if (kept) {
      if (kept.header !== header) {
        ctx.log("x402.payment_id.conflict", { paymentId });
        return new Response(
          JSON.stringify({ message: "This payment id was already used for another payment", code: "payment_identifier_conflict" }),
          { status: 409, headers: { "content-type": "application/json" } },
        );
      }
      ctx.log("x402.payment_id.replayed", { paymentId });
      return new Response(kept.response.body, { status: kept.response.status, headers: kept.response.headers });
    }
    if (this.inFlight.has(key) || (paymentId && this.inFlight.has(`id:${paymentId}`))) {
      return challenge("payment_in_progress", "This authorization is already being processed by another request", "payment_in_progress");
    }
    this.inFlight.add(key);
    if (paymentId) this.inFlight.add(`id:${paymentId}`);
    try {
      let verify: Awaited<ReturnType<typeof local.facilitator.verify>>;
      try {
        // v2 goes through the resource server (its hooks and matching); v1 straight to the same facilitator,
        // because the resource server only knows CAIP-2 networks and v1 names them ("base-sepolia").
        verify =
          payload.x402Version === 1
            ? await local.facilitator.verify(payload as unknown as PaymentPayload, requirements as unknown as PaymentRequirements)
            : await local.resourceServer.verifyPayment(payload as PaymentPayload, requirements as PaymentRequirements);
      } catch (err) {
        ctx.log("x402.verify.error", { error: String((err as Error)?.message ?? err).slice(0, 200) });
        return challenge("verification_error", "The payment could not be verified", "verification_error");
      }
      if (!verify.isValid) {
        const reason = verify.invalidReason ?? "invalid_payment";
        ctx.log("x402.verify.invalid", { reason, payer: verify.payer, path: c.req.path });
        return challenge(reason, `Payment verification failed: ${reason}`, reason);
      }
      const payer = (verify.payer ?? auth?.from) as `0x${string}`;

      const work = await o.run({ payer });
      if (!work.charge) {
        return new Response(JSON.stringify(work.body), { status: work.status, headers: { "content-type": "application/json" } });
      }

      let settle: SettleResponse;
      // upto: the seller settles what the work came to (here a share of the maximum), never more than was signed.
      const actual =
        requirements.scheme === "upto" ? (o.amount * BigInt(Math.floor(this.opts.demand.uptoSettlePercent))) / 100n : undefined;
      try {
        settle =
          payload.x402Version === 1
            ? await local.facilitator.settle(payload as unknown as PaymentPayload, requirements as unknown as PaymentRequirements)
            : await local.resourceServer.settlePayment(
                payload as PaymentPayload,
                requirements as PaymentRequirements,
                undefined,
                undefined,
                actual !== undefined ? { amount: actual.toString() } : undefined,
              );
      } catch (err) {
        settle = {
          success: false,
          errorReason: "settlement_error",
          transaction: "",
          network: requirements.network as SettleResponse["network"],
          payer,
        };
        ctx.log("x402.settle.error", { error: String((err as Error)?.message ?? err).slice(0, 200) });
      }
      const responseHeader = payload.x402Version === 1 ? "X-PAYMENT-RESPONSE" : "PAYMENT-RESPONSE";
      const encoded = encodePaymentResponseHeader(settle);
      if (!settle.success) {
        await work.undo?.().catch(() => {});
        const reason = settle.errorReason ?? "settlement_failed";
        ctx.log("x402.settle.failed", { reason, payer });
        return challenge(reason, `Payment settlement failed: ${reason}`, reason, { [responseHeader]: encoded });
      }
      ctx.log("x402.settled", {
        path: c.req.path,
        scheme: requirements.scheme,
        amount: (actual ?? o.amount).toString(),
        payer,
        transaction: settle.transaction,
        paymentId,
      });
      const answer = {
        status: work.status,
        headers: { "content-type": "application/json", [responseHeader]: encoded, "access-control-expose-headers": responseHeader },
        body: JSON.stringify(work.body),
      };
      if (paymentId) {
        this.byPaymentId.set(paymentId, { header, response: answer });
        if (this.byPaymentId.size > 10_000) this.byPaymentId.delete(this.byPaymentId.keys().next().value!);
      }
      if (this.opts.demand.dropAnswers > 0) {
        // The answer is lost after the money moved: the connection closes without it.
        this.opts.demand.dropAnswers--;
        ctx.log("x402.answer.dropped", { paymentId });
        (c.env as { incoming?: { socket?: { destroy(): void } } } | undefined)?.incoming?.socket?.destroy();
      }
      return new Response(answer.body, { status: answer.status, headers: answer.headers });
    } finally {
      this.inFlight.delete(key);
      if (paymentId) this.inFlight.delete(`id:${paymentId}`);
    }
  }
}
