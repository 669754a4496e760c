// The start of a sign-in through the identity provider (OIDC authorization code + PKCE), shared by the console's
// sign-in page and the OAuth consent page (src/oauth/), neither of which imports the other: the browser is sent to the
// provider with its `state` kept server-side (single use, PROVIDER_SIGN_IN_TTL_MS) and in a cookie scoped to the
// console's callback, which finishes it (src/console/sign-in.tsx) and, for a consent, returns to the pending request.
import type { Context } from "hono";
import { setCookie } from "hono/cookie";
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { publicOriginOf } from "../web/public-origin.js";
import { CONSOLE_PATH } from "./console-session.js";
import type { PendingSignIn } from "./sign-in.js";

export const PROVIDER_SIGN_IN_COOKIE = "tollgate_oidc";
const PROVIDER_SIGN_IN_TTL_MS = 10 * 60_000;
/** The callback's path, and the cookie's. */
const PROVIDER_CALLBACK_PATH = `${CONSOLE_PATH}/oidc/callback`;
export const PROVIDER_COOKIE_PATH = `${CONSOLE_PATH}/oidc`;
/** Where a sign-in in flight is kept, by its state. */
export const pendingProviderKey = (state: string) => `console:oidc:${state}`;

/** A sign-in in flight: for the console, or for a consent page (the pending authorization request it returns to). */
export type PendingProviderSignIn = PendingSignIn & { consent?: string };

/** The configured provider, or 404. */
export function providerClient(services: GatewayServices) {
  const oidc = services.signIn?.oidc;
  if (!oidc) throw new GatewayError(404, "not_found", "Sign-in through an identity provider is not configured here ([operators.oidc]).");
  return oidc;
}

const providerCallbackUri = (services: GatewayServices, c: Context) => `${publicOriginOf(c, services)}${PROVIDER_CALLBACK_PATH}`;

/** Sends the browser to the identity provider; with `consent`, the callback returns to that pending authorization. */
export async function startProviderSignIn(services: GatewayServices, c: Context, consent?: string): Promise<Response> {
  const oidc = providerClient(services);
  const { url, pending } = await oidc.start(providerCallbackUri(services, c));
  const kept: PendingProviderSignIn = consent ? { ...pending, consent } : pending;
  await services.stores.kv.set(pendingProviderKey(pending.state), JSON.stringify(kept), PROVIDER_SIGN_IN_TTL_MS);
  // Lax: the provider's redirect back is a top-level GET from another site, which a Strict cookie would miss.
  setCookie(c, PROVIDER_SIGN_IN_COOKIE, pending.state, {
    path: PROVIDER_COOKIE_PATH,
    httpOnly: true,
    sameSite: "Lax",
    secure: providerCallbackUri(services, c).startsWith("https:"),
    maxAge: PROVIDER_SIGN_IN_TTL_MS / 1000,
  });
  return c.redirect(url, 302);
}
