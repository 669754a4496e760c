// One paid upstream call: 402 → policy → atomic budget reservation → sign → retry → commit, release or hold.
import { x402HTTPClient, x402Client } from "@x402/core/client";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../tenants.js";
import type { BudgetLimits, LedgerEntry } from "../state/types.js";
import { atomicToUsd, usdToAtomic } from "./money.js";
import { chooseOption, effectivePolicy } from "./policy.js";
import { paymentOptions, type PaymentOption } from "./requirements.js";
import type { PaymentSigner } from "./signer.js";
import { checkBudgetAlerts } from "../operators/alerts.js";
import { onBudgetExhausted } from "../operators/kill-switch.js";

export interface PaidCallContext {
  services: GatewayServices;
  signer: PaymentSigner | undefined;
  tenant: Tenant;
  route: string;
  fingerprint: string;
  /** A keyless search token's own spend cap, checked with the tenant's budget. */
  cap?: { id: string; amount: bigint };
}

/** Sends the request upstream, with the payment header when given. */
export type UpstreamSend = (paymentHeader?: [string, string]) => Promise<Response>;

export interface PaidResult {
  response: Response;
  /** Atomic units committed or held for this call (0 when nothing was paid). */
  paid: bigint;
  entry?: LedgerEntry;
}

const parser = new x402HTTPClient(new x402Client());

export function tenantLimits(tenant: Tenant): BudgetLimits {
  const b = tenant.budget;
  return {
    daily: b.daily ? usdToAtomic(b.daily) : undefined,
    monthly: b.monthly ? usdToAtomic(b.monthly) : undefined,
    total: b.total ? usdToAtomic(b.total) : undefined,
  };
}

async function readPaymentRequired(res: Response): Promise<Record<string, any>> {
  let body: unknown;
  try {
    const text = await res.text();
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  try {
    return parser.getPaymentRequiredResponse((n) => res.headers.get(n), body) as unknown as Record<string, any>;
  } catch {
    throw new GatewayError(502, "upstream_bad_payment_request", "The upstream answered 402 without a payment request the gateway can read.");
  }
}

function settlement(res: Response): { success: boolean; transaction?: string; errorReason?: string } | undefined {
  try {
    const s = parser.getPaymentSettleResponse((n) => res.headers.get(n)) as any;
    return s ? { success: !!s.success, transaction: s.transaction || undefined, errorReason: s.errorReason } : undefined;
  } catch {
    return undefined;
  }
}

async function reserve(ctx: PaidCallContext, option: PaymentOption, id: string): Promise<LedgerEntry> {
  const { services, tenant } = ctx;
  const now = services.now();
  const base = {
    route: ctx.route,
    fingerprint: ctx.fingerprint,
    amount: option.amount.toString(),
    asset: option.asset,
    network: option.network,
    payee: option.payTo,
    instance: services.instanceId,
  };
  let capEntryId: string | undefined;
  try {
    if (ctx.cap) {
      capEntryId = `${id}:cap`;
      const r = await services.stores.ledger.reserve({ ...base, id: capEntryId, tenant: `token:${ctx.cap.id}` }, { total: ctx.cap.amount }, now);
      if (!r.ok) {
        throw new GatewayError(402, "token_cap_exceeded", `This token's spend cap of $${atomicToUsd(ctx.cap.amount)} would be exceeded ($${atomicToUsd(r.spent)} spent, this call costs $${atomicToUsd(option.amount)}).`, {
          limit: atomicToUsd(r.limit),
          spent: atomicToUsd(r.spent),
          price: atomicToUsd(option.amount),
        });
      }
    }
    const r = await services.stores.ledger.reserve({ ...base, id, tenant: tenant.id }, tenantLimits(tenant), now);
    if (!r.ok) {
      if (capEntryId) await services.stores.ledger.release(capEntryId, "tenant budget exceeded", now);
      void onBudgetExhausted(services, tenant.id, r.window); // alert, and the kill switch for onExhausted = "stop"
      throw new GatewayError(
        402,
        "budget_exceeded",
        `The ${r.window} budget of tenant "${tenant.id}" cannot cover this call: $${atomicToUsd(r.spent)} of $${atomicToUsd(r.limit)} spent, this call costs $${atomicToUsd(option.amount)}.${r.resetAt ? ` It resets at ${r.resetAt}.` : ""}`,
        { window: r.window, limit: atomicToUsd(r.limit), spent: atomicToUsd(r.spent), price: atomicToUsd(option.amount), resetAt: r.resetAt },
      );
    }
    return r.entry;
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    // Fail closed: no reservation, no signature.
    services.logger.error("ledger unavailable", { error: String(err) });
    throw new GatewayError(503, "state_unavailable", "The gateway cannot reach its budget store, so it will not pay; try again shortly.");
  }
}

/** All ledger ids touched by one call (the tenant's and, for capped tokens, the token's). */
const idsOf = (ctx: PaidCallContext, id: string) => (ctx.cap ? [id, `${id}:cap`] : [id]);

export async function paidCall(ctx: PaidCallContext, send: UpstreamSend): Promise<PaidResult> {
  const { services } = ctx;
  const first = await send();
  if (first.status !== 402 || !services.config.payments.enabled) return { response: first, paid: 0n };
  if (!ctx.signer) throw new GatewayError(503, "payments_not_configured", "The upstream asks for payment but the gateway has no wallet; set TOLLGATE_WALLET_KEY.");

  const paymentRequired = await readPaymentRequired(first);
  const choice = chooseOption(paymentOptions(paymentRequired as any), effectivePolicy(services.config.payments, ctx.tenant.payment));
  if (!choice.ok) {
    const { ok: _ok, code, message, ...figures } = choice;
    throw new GatewayError(402, code, message, figures);
  }
  const option = choice.option;
  const id = crypto.randomUUID();
  const entry = await reserve(ctx, option, id);
  const ledger = services.stores.ledger;
  const ids = idsOf(ctx, id);
  const each = async (fn: (id: string) => Promise<void>) => {
    for (const x of ids) await fn(x);
  };

  let signed;
  try {
    signed = await ctx.signer.sign(paymentRequired, option, effectivePolicy(services.config.payments, ctx.tenant.payment).maxAuthorizationSeconds);
    // The ledger learns of the authorization before it leaves the gateway.
    await each((x) => ledger.signed(x, { nonce: signed!.nonce, validBefore: signed!.validBefore, payer: signed!.payer }, services.now()));
  } catch (err) {
    await each((x) => ledger.release(x, `not sent: ${String((err as Error)?.message ?? err).slice(0, 200)}`, services.now())).catch(() => {});
    if (err instanceof GatewayError) throw err;
    throw new GatewayError(502, "payment_signing_failed", "The gateway could not sign the payment; nothing was paid.");
  }

  let res: Response;
  try {
    res = await send(signed.header);
  } catch (err) {
    await each((x) => ledger.markUncertain(x, "no answer after the signature was sent", services.now()));
    throw new GatewayError(
      504,
      "payment_outcome_unknown",
      `The upstream did not answer after receiving the payment; $${atomicToUsd(option.amount)} stays held until ${new Date(signed.validBefore * 1000).toISOString()} and is then settled from the chain. Retry with the same Idempotency-Key to avoid paying twice.`,
      { held: atomicToUsd(option.amount), validBefore: new Date(signed.validBefore * 1000).toISOString() },
    );
  }

  const settled = settlement(res);
  const now = services.now();
  if (res.ok && settled?.success) {
    await each((x) => ledger.commit(x, settled.transaction, now));
    void checkBudgetAlerts(services, ctx.tenant.id);
    return { response: res, paid: option.amount, entry: { ...entry, state: "committed", transaction: settled.transaction } };
  }
  if (res.status === 402 || (res.status >= 400 && res.status < 500) || settled?.success === false) {
    // The upstream verifies before it works and settles after: a 4xx (or a failed settlement) took no money.
    const reason = settled?.errorReason ?? `upstream answered ${res.status}`;
    await each((x) => ledger.release(x, reason, now));
    if (res.status === 402) {
      const body = await res.text().catch(() => "");
      let detail = "";
      try {
        const j = JSON.parse(body);
        detail = j.message ?? j.error ?? "";
      } catch { /* not JSON */ }
      throw new GatewayError(502, "upstream_refused_payment", `The upstream refused the gateway's payment${detail ? `: ${detail}` : ""}. Nothing was charged.`, { reason: settled?.errorReason ?? detail });
    }
    return { response: res, paid: 0n };
  }
  // 5xx, or a success without a settlement receipt: the money may or may not have moved.
  await each((x) => ledger.markUncertain(x, settled ? "settlement not confirmed" : `upstream answered ${res.status} without a settlement receipt`, now));
  return { response: res, paid: option.amount, entry: { ...entry, state: "uncertain" } };
}
