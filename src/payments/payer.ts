// The x402 payer: one paid upstream call, run here and nowhere else. 402 → policy → atomic budget reservation carrying
// the chosen authorization (or the one reserved ahead, ./paid-ahead.ts) → sign → retry → commit, release or hold
// (docs/paid-round-trips.md). Its one entry is payX402 (through ./index.ts): the paid search and the paid session
// hand it how to send the call (the search its fleet claim too), and get back once the answer and what it cost.
import { x402HTTPClient, x402Client } from "@x402/core/client";
import type { Context } from "hono";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../identity/tenants.js";
import { isStateUnavailable } from "../state/errors.js";
import { atomicToUsd } from "./money.js";
import { chooseOption, effectivePolicy } from "./policy.js";
import { paymentOptions } from "./requirements.js";
import type { SignedFields, SignedPayment } from "./schemes/types.js";
import { schemeFor } from "./schemes/index.js";
import { permit2ApprovalRequired, requirePermit2Approval } from "./permit2-approval.js";
import type { PaymentOption } from "./requirements.js";
import { holdSpend, releaseSpend, reserveSpend, settleSpend, type SpendCap, type SpendHold } from "./spend.js";
import { type AheadHold, forgetPaid, type PaidCallContext, paymentEntry, rememberPaid, reserveAhead } from "./paid-ahead.js";
import { type CallOptions, type EarlyMoney, type MoneySteps, type Paid, type PaidResult, runMoney } from "./money-call.js";
import { readWire } from "../upstream/records.js";
import { PaymentRequired, SettleResponse } from "./wire.js";
import { childSpan } from "../telemetry/tracing.js";

/** Sends the request upstream, with the payment header when given. */
type UpstreamSend = (paymentHeader?: [string, string]) => Promise<Response>;

/** One x402 call as its caller describes it: who pays, for what, and how it is sent. */
export interface X402Call {
  services: GatewayServices;
  tenant: Tenant;
  /** The route row's name (`x402.web.search`): the ledger entry's route; the last option paid on it is reserved ahead. */
  route: string;
  fingerprint: string;
  /** A keyless token's own spend cap, checked with the tenant's budget. */
  cap?: SpendCap;
  /** The request paying: budget alerts and the kill switch run beside it, the payment's span under its own. */
  context?: Context;
  send: UpstreamSend;
  /** The client sent a payment of its own: the call is not started early (its first call may carry money). */
  clientPaid?: boolean;
}

/**
 * The x402 payer's one entry: the call, paid from the wallet that pays for the tenant (docs/accounts.md#wallets), run
 * whole and answered once. With the fleet's coalescing claim (`claim`, the paid search), its early part starts beside
 * the claim: the unpaid first call, sent at once, and the option last paid on the route reserved ahead; both are given
 * back when another instance's answer is used instead (`{ elsewhere }`).
 * @example const { response, paid } = await payX402({ services, tenant, route, fingerprint, send })
 */
export function payX402<T = never>(call: X402Call & CallOptions<T>): Promise<Paid<T>> {
  const { services, send } = call;
  const ctx: PaidCallContext = {
    services,
    ...(services.wallets?.forTenant(call.tenant) ?? { signer: undefined }),
    tenant: call.tenant,
    route: call.route,
    fingerprint: call.fingerprint,
    cap: call.cap,
    context: call.context,
  };
  const steps: MoneySteps = {
    early: services.config.payments.enabled && !call.clientPaid,
    start: () => {
      const first = send();
      // Handled from the start: it may fail while the claim is still on its way (its failure is the payment's to report).
      first.catch(() => {});
      return { paid: { first, ahead: reserveAhead(ctx) } };
    },
    drop: (e: EarlyMoney, reason: string) => {
      e.paid?.first.then((r) => r.body?.cancel()).catch(() => {});
      e.paid?.ahead?.drop(reason);
    },
    run: (e?: EarlyMoney) => paidCall(ctx, send, e?.paid),
  };
  return runMoney(services, { tenant: call.tenant, context: call.context }, steps, call);
}

const parser = new x402HTTPClient(new x402Client());

async function readPaymentRequired(res: Response): Promise<PaymentRequired> {
  let body: unknown;
  try {
    const text = await res.text();
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  try {
    return readWire(
      PaymentRequired,
      parser.getPaymentRequiredResponse((n) => res.headers.get(n), body),
    );
  } catch {
    throw new GatewayError(
      502,
      "upstream_bad_payment_request",
      "The upstream answered 402 without a payment request the gateway can read.",
    );
  }
}

function settlement(res: Response): SettleResponse | undefined {
  try {
    const answer = parser.getPaymentSettleResponse((n) => res.headers.get(n));
    if (!answer) return undefined;
    const s = readWire(SettleResponse, answer);
    return { success: s.success, transaction: s.transaction || undefined, errorReason: s.errorReason, amount: s.amount };
  } catch {
    return undefined;
  }
}

/** `early`: the unpaid first call, already sent, and a hold reserved ahead beside it. */
async function paidCall(ctx: PaidCallContext, send: UpstreamSend, early?: EarlyMoney["paid"]): Promise<PaidResult> {
  try {
    return await paidCallWith(ctx, send, early);
  } finally {
    // Not taken by a payment (no 402, a refusal before the reservation, a failure): given back, behind the call, and
    // the route's next misses reserve after the 402 until a payment succeeds again.
    if (early?.ahead?.drop("reserved ahead, not used by the call")) forgetPaid(ctx);
  }
}

async function paidCallWith(ctx: PaidCallContext, send: UpstreamSend, early?: EarlyMoney["paid"]): Promise<PaidResult> {
  const { services } = ctx;
  const first = await (early?.first ?? send());
  if (first.status !== 402 || !services.config.payments.enabled) return { response: first, paid: 0n };
  const ahead = early?.ahead;
  // Traced (when configured): the payment, from the 402 to the settlement, is a span of its own.
  const span = childSpan(ctx.context, services.tracer, "x402.payment");
  if (!span) return pay(ctx, send, first, ahead);
  // The calls made while paying (the paid retry) are children of the payment span.
  const request = ctx.context!.get("span");
  ctx.context!.set("span", span);
  try {
    const result = await pay(ctx, send, first, ahead);
    span.setAttribute("tollgate.paid_usd", atomicToUsd(result.paid));
    if (result.entry) span.setAttribute("tollgate.ledger_state", result.entry.state);
    span.end();
    return result;
  } catch (err) {
    span.end(String((err as { code?: string })?.code ?? "payment_failed"));
    throw err;
  } finally {
    ctx.context!.set("span", request);
  }
}

/**
 * Sends the signed payment; when no answer comes back (the connection failed), sends the very same payment once more:
 * its payment id is the same, so a seller that took it answers what it answered, and the chain takes an authorization
 * once in any case. A payment without an id (x402 v1) is not sent twice.
 */
async function sendPaid(services: GatewayServices, send: UpstreamSend, signed: SignedPayment): Promise<Response> {
  try {
    return await send(signed.header);
  } catch (err) {
    // A timeout may be a seller still at work: sending again would only race it. A lost connection is sent again.
    const timedOut = err instanceof GatewayError && err.status === 504;
    if (timedOut || !signed.paymentId || signed.validBefore * 1000 <= services.now()) throw err;
    services.logger.info("no answer to a paid request; sending the same payment again", { paymentId: signed.paymentId });
    return send(signed.header);
  }
}

/**
 * What an `upto` payment came to: the settlement answer's amount, never above the signed maximum (reserved and
 * checked by the policy). Undefined for a scheme that settles its whole amount, or when the answer names no valid
 * amount (the maximum then stands: the ledger never counts less than may have moved).
 */
function settledAmount(services: GatewayServices, option: PaymentOption, amount: string | undefined, entry: string): bigint | undefined {
  if (!schemeFor(option)?.settlesBelowAmount) return undefined;
  if (typeof amount !== "string" || !/^\d{1,78}$/.test(amount)) {
    services.logger.info("an upto settlement named no amount; the maximum stands", { entry });
    return undefined;
  }
  const n = BigInt(amount);
  if (n > option.amount) {
    services.logger.error("an upto settlement named more than the signed maximum; the maximum stands", { entry, amount });
    return undefined;
  }
  return n;
}

/** After the upstream's 402: choose, reserve (or take the hold reserved ahead), sign, send again, settle (or release, or hold). */
async function pay(ctx: PaidCallContext, send: UpstreamSend, first: Response, ahead?: AheadHold): Promise<PaidResult> {
  const { services } = ctx;
  if (!ctx.signer)
    throw new GatewayError(
      503,
      "payments_not_configured",
      "The upstream asks for payment but the gateway has no wallet; set TOLLGATE_WALLET_KEY.",
    );

  const paymentRequired = await readPaymentRequired(first);
  const policy = effectivePolicy(services, ctx.tenant);
  const choice = chooseOption(paymentOptions(paymentRequired), policy);
  if (!choice.ok) {
    const { ok: _ok, code, message, ...figures } = choice;
    throw new GatewayError(402, code, message, figures);
  }
  const option = choice.option;
  const maxLifetime = policy.maxAuthorizationSeconds;
  // The hold reserved ahead, when it is for exactly this option: nothing more to wait for before signing.
  const held = await ahead?.take(option, maxLifetime);
  services.metrics.reservedAhead(held ? "taken" : ahead ? "released" : "none");
  let hold: SpendHold;
  let auth: SignedFields;
  if (held) ({ hold, auth } = held);
  else {
    // Permit2 (exact over Permit2, upto) needs the wallet's one-time approval: refused by name before anything is held.
    await requirePermit2Approval(
      services.payments.permit2Approved,
      option,
      ctx.signer.address,
      services.config.payments.rpc,
      services.now(),
    );
    // The authorization is chosen first so that the reservation holds it: the hold is the durable record of what may
    // be signed, in the same atomic call as the budget check (the reconciler settles it from the chain once it lapses).
    const chosen = ctx.signer.authorization(option, maxLifetime, services.now());
    if (!chosen) throw new GatewayError(502, "payment_signing_failed", "The gateway could not sign the payment; nothing was paid.");
    auth = chosen;
    // upto: the option's amount is the maximum; it is what is reserved and what the policy checked.
    hold = await reserveSpend(services, { tenant: ctx.tenant, cap: ctx.cap, entry: paymentEntry(ctx, option, auth), context: ctx.context });
  }
  rememberPaid(ctx, option);
  const entry = hold.entry;

  let signed: SignedPayment;
  try {
    signed = await ctx.signer.sign(paymentRequired, option, maxLifetime, auth);
  } catch (err) {
    await releaseSpend(services, hold, `not sent: ${String((err as Error)?.message ?? err).slice(0, 200)}`).catch(() => {});
    // The ledger could not confirm the signature (state store down, no replica confirmed it): a 503, nothing was sent.
    if (err instanceof GatewayError || isStateUnavailable(err)) throw err;
    throw new GatewayError(502, "payment_signing_failed", "The gateway could not sign the payment; nothing was paid.");
  }

  let res: Response;
  try {
    res = await sendPaid(services, send, signed);
  } catch {
    await holdSpend(services, hold, "no answer after the signature was sent");
    throw new GatewayError(
      504,
      "payment_outcome_unknown",
      `The upstream did not answer after receiving the payment; $${atomicToUsd(option.amount)} stays held until ${new Date(signed.validBefore * 1000).toISOString()} and is then settled from the chain. Retry with the same Idempotency-Key to avoid paying twice.`,
      { held: atomicToUsd(option.amount), validBefore: new Date(signed.validBefore * 1000).toISOString() },
    );
  }

  const settled = settlement(res);
  if (res.ok && settled?.success) {
    const finalAmount = settledAmount(services, option, settled.amount, entry.id);
    // Recorded behind the answer: the hold already counts the (larger or equal) reserved amount in every window and
    // carries the signature, so the budget never undercounts whether or not the commit has landed; were the gateway to
    // die first (or the store refuse the commit), the reconciler settles the signed hold from the chain once it
    // expires, as after a crash mid-payment.
    services.background(
      ctx.context,
      settleSpend(services, hold, { transaction: settled.transaction, context: ctx.context, finalAmount }),
      "commit a settled payment",
    );
    const paid = finalAmount ?? option.amount;
    return {
      response: res,
      paid,
      entry: {
        ...entry,
        state: "committed",
        transaction: settled.transaction,
        ...(finalAmount !== undefined ? { amount: paid.toString() } : {}),
      },
    };
  }
  if (settled?.errorReason === "settlement_pending") {
    // The settlement was sent and not yet seen mined: unknown, not failed. Held until the chain says (the reconciler).
    await holdSpend(services, hold, `settlement pending${settled.transaction ? ` (transaction ${settled.transaction})` : ""}`);
    if (res.ok) return { response: res, paid: option.amount, entry: { ...entry, state: "uncertain" } };
    throw new GatewayError(
      502,
      "payment_outcome_unknown",
      `The upstream says its settlement of the payment is still pending; $${atomicToUsd(option.amount)} stays held until ${new Date(signed.validBefore * 1000).toISOString()} and is then settled from the chain. Retry with the same Idempotency-Key to avoid paying twice.`,
      {
        held: atomicToUsd(option.amount),
        validBefore: new Date(signed.validBefore * 1000).toISOString(),
        reason: "settlement_pending",
        ...(settled.transaction ? { transaction: settled.transaction } : {}),
      },
    );
  }
  if (res.status === 402 || (res.status >= 400 && res.status < 500) || settled?.success === false) {
    // The upstream verifies before it works and settles after: a 4xx (or a failed settlement) took no money.
    const reason = settled?.errorReason ?? `upstream answered ${res.status}`;
    await releaseSpend(services, hold, reason);
    if (res.status === 402) {
      const body = await res.text().catch(() => "");
      let detail = "";
      let code = "";
      try {
        const j = JSON.parse(body);
        detail = j.message ?? j.error ?? "";
        code = typeof j.code === "string" ? j.code : typeof j.error === "string" ? j.error : "";
      } catch {
        /* not JSON */
      }
      // The seller's facilitator found no Permit2 allowance: the same named answer as the gateway's own check.
      if (code === "permit2_allowance_required" || settled?.errorReason === "permit2_allowance_required")
        throw permit2ApprovalRequired(option, ctx.signer.address);
      throw new GatewayError(
        502,
        "upstream_refused_payment",
        `The upstream refused the gateway's payment${detail ? `: ${detail}` : ""}. Nothing was charged.`,
        { reason: settled?.errorReason ?? detail },
      );
    }
    return { response: res, paid: 0n };
  }
  // 5xx, or a success without a settlement receipt: the money may or may not have moved.
  await holdSpend(services, hold, settled ? "settlement not confirmed" : `upstream answered ${res.status} without a settlement receipt`);
  return { response: res, paid: option.amount, entry: { ...entry, state: "uncertain" } };
}
