// A paid call's hold reserved ahead: beside the fleet's coalescing claim and the unpaid first call, the option this
// instance last paid on the same route with the same wallet is reserved with the authorization that will sign it, so
// that when the 402 asks for the same again the payment is signed and sent with no state round trip in between
// (docs/paid-round-trips.md). A hold not taken (another option asked, the answer came from the fleet) is released.
import type { GatewayServices } from "../services.js";
import { chooseOption, effectivePolicy } from "./policy.js";
import type { PaymentOption } from "./requirements.js";
import { lifetimeOf } from "./schemes/library-sign.js";
import type { SignedFields } from "./schemes/types.js";
import { releaseSpend, reserveSpend, type SpendCap, type SpendHold } from "./spend.js";
import type { Context } from "hono";
import type { Tenant } from "../identity/tenants.js";
import type { PaymentSigner } from "./signer.js";

/** Who pays for a paid call, for what, with which wallet (src/payments/payer.ts). */
export interface PaidCallContext {
  services: GatewayServices;
  signer: PaymentSigner | undefined;
  /** The upstream account whose wallet `signer` is (docs/accounts.md#wallets); undefined: the gateway's wallet. */
  account?: string;
  tenant: Tenant;
  route: string;
  fingerprint: string;
  /** A keyless search token's own spend cap, checked with the tenant's budget. */
  cap?: SpendCap;
  /** The request paying: budget alerts and the kill switch run beside it. */
  context?: Context;
}

/** A hold reserved for `option`, carrying the authorization `auth` a signature of it will carry (nothing signed yet). */
export interface HeldPayment {
  option: PaymentOption;
  auth: SignedFields;
  hold: SpendHold;
}

/**
 * The option an instance last paid per route and wallet (services.payments.lastPaid, bounded), whichever tenant paid
 * it: the upstream prices a route alike for every caller, so a tenant's first miss on an instance reserves ahead too
 * (each tenant's own policy is checked before its hold is reserved).
 */
const paidOptions = (services: GatewayServices) => services.payments.lastPaid;

const keyOf = (ctx: PaidCallContext) => `${ctx.route}\n${ctx.account ?? ""}`;

/** Remembers the option just paid (it is what the next miss on the route reserves ahead). */
export function rememberPaid(ctx: PaidCallContext, option: PaymentOption): void {
  paidOptions(ctx.services).set(keyOf(ctx), option);
}

/**
 * Forgets it: a call whose hold reserved ahead went unused (the upstream failing, or not asking for payment) stops the
 * route's next misses from reserving ahead until a payment succeeds again, so an outage leaves at most a few released
 * holds per route and instance, not one per request.
 */
export function forgetPaid(ctx: PaidCallContext): void {
  paidOptions(ctx.services).delete(keyOf(ctx));
}

/** The ledger entry of a payment of `option` with the authorization `auth`: the hold is the record of what may be signed. */
export function paymentEntry(ctx: PaidCallContext, option: PaymentOption, auth: SignedFields) {
  return {
    kind: "x402" as const,
    route: ctx.route,
    fingerprint: ctx.fingerprint,
    amount: option.amount.toString(),
    asset: option.asset,
    network: option.network,
    payee: option.payTo,
    nonce: auth.nonce,
    validBefore: auth.validBefore,
    payer: auth.payer,
    ...(ctx.account !== undefined ? { account: ctx.account } : {}),
  };
}

/** Whether a hold reserved ahead pays exactly `option`, within the lifetime policy allows it now. */
function fits(held: HeldPayment, option: PaymentOption, maxLifetimeSeconds: number, nowMs: number): boolean {
  const a = held.option;
  const nowS = Math.floor(nowMs / 1000);
  return (
    a.x402Version === option.x402Version &&
    a.scheme === option.scheme &&
    a.network === option.network &&
    a.asset.toLowerCase() === option.asset.toLowerCase() &&
    a.payTo.toLowerCase() === option.payTo.toLowerCase() &&
    a.amount === option.amount &&
    JSON.stringify(a.raw.extra ?? null) === JSON.stringify(option.raw.extra ?? null) &&
    // Never longer-lived than this option and policy allow, and still worth signing (5 s left at least).
    held.auth.validBefore <= nowS + lifetimeOf(option, maxLifetimeSeconds) &&
    held.auth.validBefore > nowS + 5
  );
}

/** A hold reserved ahead, taken once by the payment it fits, or released. */
export class AheadHold {
  #open = true;
  readonly #services: GatewayServices;
  readonly #held: Promise<HeldPayment | undefined>;
  readonly #context: PaidCallContext["context"];

  constructor(ctx: PaidCallContext, held: Promise<HeldPayment | undefined>) {
    this.#services = ctx.services;
    this.#held = held;
    this.#context = ctx.context;
  }

  /**
   * The hold when it was reserved for exactly `option` (taken: never handed out twice); otherwise it is released
   * behind the call and undefined is answered (the caller reserves afresh).
   */
  async take(option: PaymentOption, maxLifetimeSeconds: number): Promise<HeldPayment | undefined> {
    if (!this.#open) return undefined;
    this.#open = false;
    const held = await this.#held;
    if (!held) return undefined;
    if (fits(held, option, maxLifetimeSeconds, this.#services.now())) return held;
    this.#release(held, "reserved ahead for another payment option");
    return undefined;
  }

  /**
   * Not needed (no payment asked, the answer came from elsewhere, the call failed first): released behind. True when
   * it was still open (not taken by a payment).
   */
  drop(reason: string): boolean {
    if (!this.#open) return false;
    this.#open = false;
    void this.#held.then((held) => held && this.#release(held, reason));
    return true;
  }

  #release(held: HeldPayment, reason: string): void {
    // A release the store cannot take now is retried by the reconciler; an unsigned authorization expires unused.
    this.#services.background(
      this.#context,
      releaseSpend(this.#services, held.hold, reason).catch(() => {}),
      "release a hold reserved ahead",
    );
  }
}

/**
 * Reserves ahead the option this instance last paid on the call's route with its wallet, when the tenant's policy
 * allows it: undefined when there is none. The reservation is the same atomic one as after a 402 (budget windows, a
 * token's cap, the stopped check); a refusal or an outage is not reported here (the payment reserves afresh and
 * reports it).
 */
export function reserveAhead(ctx: PaidCallContext): AheadHold | undefined {
  const { services, signer } = ctx;
  if (!signer || !services.config.payments.enabled) return undefined;
  const option = paidOptions(services).get(keyOf(ctx));
  if (!option) return undefined;
  const policy = effectivePolicy(services, ctx.tenant);
  if (!chooseOption([option], policy).ok) return undefined;
  const auth = signer.authorization(option, policy.maxAuthorizationSeconds, services.now());
  if (!auth) return undefined;
  const held = reserveSpend(services, {
    tenant: ctx.tenant,
    cap: ctx.cap,
    entry: paymentEntry(ctx, option, auth),
    context: ctx.context,
  }).then(
    (hold) => ({ option, auth, hold }),
    () => undefined,
  );
  return new AheadHold(ctx, held);
}
