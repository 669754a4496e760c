// Sign-in-with-x (CAIP-122, the x402 `sign-in-with-x` extension from @x402/extensions): a wallet that bought a sandbox
// or a session comes back to it by signing a challenge, instead of presenting its `x-tollgate-wallet-token`. The
// challenge rides in the 402 (PAYMENT-REQUIRED `extensions["sign-in-with-x"]`) of every sold row and of the rows that
// read or stop what was bought; the signed proof (`SIGN-IN-WITH-X` header) is checked against the gateway's public
// origin (`server.publicOrigin`, not the request's Host), its chain against the accepted networks, its signature, and
// its nonce: issued by the gateway (an HMAC of the time and a random part, so issuing writes nothing), unexpired, and
// used once across the fleet (a claim in the shared key-value store). The proof admits the wallet's tenant on the row
// as its key would: what another wallet owns answers 404; nothing is spent (only free rows take a proof).
import {
  buildSIWxSchema,
  parseSIWxHeader,
  SIGN_IN_WITH_X,
  type SIWxExtensionInfo,
  type SupportedChain,
  validateSIWxMessage,
  verifySIWxSignature,
} from "@x402/extensions/sign-in-with-x";
import { encodePaymentRequiredHeader } from "@x402/core/http";
import type { Context, MiddlewareHandler } from "hono";
import type { SalesConfig } from "../../config/sales-schema.js";
import type { GatewayEnv } from "../context.js";
import { GatewayError } from "../errors.js";
import type { TenantCaller } from "../identity/caller.js";
import type { GatewayServices } from "../services.js";
import { publicOriginOf } from "../web/public-origin.js";
import type { WalletTenants } from "./wallet-tenants.js";
import { type Offer, paymentRequired } from "./offer.js";

/** How long a challenge may be signed and used for. */
const CHALLENGE_SECONDS = 300;

const hex = (buf: ArrayBuffer) => [...new Uint8Array(buf)].map((b) => b.toString(16).padStart(2, "0")).join("");

export class SiwxGate {
  private hmacKey: Promise<CryptoKey> | undefined;

  constructor(
    private readonly services: GatewayServices,
    private readonly sales: SalesConfig,
    private readonly wallets: WalletTenants,
    private readonly secret: string,
  ) {}

  private async mac(text: string): Promise<string> {
    this.hmacKey ??= crypto.subtle.importKey("raw", new TextEncoder().encode(this.secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
    ]);
    return hex(await crypto.subtle.sign("HMAC", await this.hmacKey, new TextEncoder().encode(`tollgate siwx nonce:${text}`))).slice(0, 24);
  }

  /** A nonce of the gateway's: 8 hex of the issue time (s), 16 random hex, 24 hex of their HMAC. */
  private async nonce(issuedSec: number): Promise<string> {
    const t = issuedSec.toString(16).padStart(8, "0");
    const r = hex(crypto.getRandomValues(new Uint8Array(8)).buffer as ArrayBuffer);
    return `${t}${r}${await this.mac(t + r)}`;
  }

  /** Whether `nonce` is one of the gateway's, unexpired, and not used before (it is used now, fleet-wide). */
  private async useNonce(nonce: string): Promise<boolean> {
    if (!/^[0-9a-f]{48}$/.test(nonce)) return false;
    const t = nonce.slice(0, 8);
    const r = nonce.slice(8, 24);
    if ((await this.mac(t + r)) !== nonce.slice(24)) return false;
    const age = this.services.now() / 1000 - Number.parseInt(t, 16);
    if (age < -5 || age > CHALLENGE_SECONDS) return false;
    return this.services.stores.kv.setIfAbsent(`sales:siwx:used:${nonce}`, "1", (CHALLENGE_SECONDS + 60) * 1000);
  }

  /** The `sign-in-with-x` extension for a 402 at `c`'s URL: a fresh challenge for each accepted EVM network. */
  async declaration(c: Context<GatewayEnv>) {
    const origin = publicOriginOf(c, this.services);
    const url = `${origin}${new URL(c.req.url).pathname}`;
    const now = this.services.now();
    const info: SIWxExtensionInfo = {
      domain: new URL(origin).host,
      uri: url,
      statement: "Sign in to reach what this wallet bought through Tollgate",
      version: "1",
      nonce: await this.nonce(Math.floor(now / 1000)),
      issuedAt: new Date(now).toISOString(),
      expirationTime: new Date(now + CHALLENGE_SECONDS * 1000).toISOString(),
      resources: [url],
    };
    const supportedChains: SupportedChain[] = [...new Set(this.sales.accept.map((a) => a.network))]
      .filter((n) => n.startsWith("eip155:"))
      .map((chainId) => ({ chainId, type: "eip191" }));
    return { [SIGN_IN_WITH_X]: { info, supportedChains, schema: buildSIWxSchema() } };
  }

  /**
   * The wallet tenant a `SIGN-IN-WITH-X` proof signs in, or a 401 naming what is wrong (the origin, the time, the
   * nonce, the chain, the signature), or 404 when the wallet never bought anything here.
   */
  async signIn(c: Context<GatewayEnv>, header: string): Promise<TenantCaller> {
    const refuse = (code: string, why: string) => new GatewayError(401, code, `The sign-in-with-x proof was refused: ${why}`);
    let payload: ReturnType<typeof parseSIWxHeader>;
    try {
      payload = parseSIWxHeader(header);
    } catch (err) {
      throw refuse("siwx_invalid", String((err as Error).message));
    }
    const origin = new URL(publicOriginOf(c, this.services));
    if (!this.sales.accept.some((a) => a.network === payload.chainId))
      throw refuse("invalid_siwx_chain_id", `chain ${payload.chainId} is not one this gateway accepts.`);
    // Time, origin and signature first; the nonce is spent last, only by a proof that is otherwise good.
    const valid = await validateSIWxMessage(payload, origin, { maxAge: CHALLENGE_SECONDS * 1000, checkNonce: () => true });
    if (!valid.isValid) throw refuse(valid.invalidReason, valid.invalidMessage);
    const verified = await verifySIWxSignature(payload);
    if (!verified.isValid) throw refuse(verified.invalidReason, verified.invalidMessage);
    if (!(await this.useNonce(payload.nonce)))
      throw refuse("invalid_siwx_nonce", "its nonce is not one this gateway issued, has expired, or was used already.");
    const caller = await this.wallets.existing(verified.payer as `0x${string}`);
    if (!caller) throw new GatewayError(404, "not_found", "This wallet has bought nothing here.");
    return caller;
  }
}

/**
 * In front of a row that reads, lists or stops what a wallet bought (a free row of a sold kind): a caller with a key or
 * a token goes on as before; a `SIGN-IN-WITH-X` proof runs the row as the wallet's tenant (ownership as for its key:
 * another wallet's ids answer 404); no credential at all gets a 402 carrying a challenge (and the class's offer, whose
 * network the client signs in on).
 */
export function siwxStep(gate: SiwxGate, offerOf: (c: Context<GatewayEnv>) => Promise<Offer>): MiddlewareHandler<GatewayEnv> {
  return async function signIn(c, next) {
    const h = c.req.raw.headers;
    if (h.has("x-api-key") || h.has("authorization")) return next();
    const proof = h.get(SIGN_IN_WITH_X);
    if (proof) {
      const caller = await gate.signIn(c, proof);
      c.set("soldCaller", caller);
      c.get("logFields").tenant = caller.tenant.id;
      c.get("logFields").auth = "siwx";
      return next();
    }
    const offer = await offerOf(c);
    const message = "Sign in with the wallet that bought this (sign-in-with-x), or call with a tenant key or the wallet token.";
    c.get("logFields").code = "sign_in_required";
    return new Response(JSON.stringify({ message, code: "sign_in_required" }), {
      status: 402,
      headers: {
        "content-type": "application/json",
        "cache-control": "no-store",
        "payment-required": encodePaymentRequiredHeader(paymentRequired(offer, message, await gate.declaration(c))),
      },
    });
  };
}
