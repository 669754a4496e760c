// The consent form (POST /authorize): what the tenant chose, checked (scopes the client asked for and the tenant has, the
// tools within them, a cap with its window, an expiry), then the sign-in (a tenant key, a one-time console link, or the
// identity provider's ticket, used up last), then a single-use code bound to the PKCE challenge and to the key that
// consented, sent back to the client's redirect URI.
import type { McpScope } from "../identity/tokens.js";
import { toolsByScope } from "./tools.js";
import { signInKey } from "../identity/resources.js";
import { hashTenantKey, keyIdOf, type Tenant } from "../identity/tenants.js";
import { redeemLink } from "../operators/actions/console-links.js";
import { usdAmount } from "../../config/fields.js";
import { usdToAtomic } from "../payments/index.js";
import type { RowHandler } from "../routing/handlers.js";
import type { OAuthCode } from "../state/oauth.js";
import { ConsentPage, oauthHtml as html } from "./page.js";
import { peekConsentTicket, takeConsentTicket } from "./oidc-consent.js";
import { audit } from "../operators/actions/tenant-changes.js";
import type { OAuthContext } from "./context.js";
import { consentView, PENDING_ID, signedInView, type PendingRequest } from "./authorize.js";
import { errorPage, formOf, randomToken, redirectTo, sameSecret, sha256url } from "./http.js";

const CAP_WINDOWS = ["daily", "monthly", "total"] as const;

/** The tenant a credential signs in, and the id of its key: a tenant key, or a one-time console link (its URL or code). */
async function signIn(services: OAuthContext["services"], credential: string): Promise<{ tenant: Tenant; parentKey: string } | undefined> {
  if (!credential) return undefined;
  try {
    const tenant = await signInKey(services, credential);
    return { tenant, parentKey: keyIdOf(await hashTenantKey(credential)) };
  } catch {
    // not a key: maybe a link
  }
  let code = credential;
  try {
    code = new URL(credential).searchParams.get("code") ?? credential;
  } catch {
    // a bare code
  }
  const link = await redeemLink(services, code);
  const tenant = link ? services.directory.get(link.tenant) : undefined;
  if (!link || !tenant?.enabled || !tenant.keys.some((k) => k.hash === link.keyHash)) return undefined;
  return { tenant, parentKey: keyIdOf(link.keyHash) };
}

/** POST /authorize: the consent form checked (the form's own choices first, the sign-in last), then a single-use code. */
export function consentDecision(ctx: OAuthContext): RowHandler {
  const { services, config, store, origin } = ctx;
  return async function consentDecision(c) {
    if (!config.enabled) return errorPage(404, "Not available", "This gateway runs no authorization server.");
    let form: URLSearchParams;
    try {
      form = await formOf(c);
    } catch {
      return errorPage(400, "This form could not be read", "Reload the page and try again.");
    }
    const id = form.get("request") ?? "";
    const raw = PENDING_ID.test(id) ? await store.getPending(id) : undefined;
    if (!raw) return errorPage(400, "This request has expired", "Go back to the application and connect again.");
    const p = JSON.parse(raw) as PendingRequest;
    if (!sameSecret(form.get("_csrf") ?? "", p.csrf))
      return errorPage(403, "This form was not sent from its own page", "Reload the page and try again.");
    const iss = origin(c);
    if (form.get("action") === "deny") {
      if ((await store.takePending(id)) === undefined)
        return errorPage(400, "This request has expired", "Go back to the application and connect again.");
      return redirectTo(p.redirectUri, {
        error: "access_denied",
        error_description: "The tenant denied the request.",
        state: p.state,
        iss,
      });
    }
    const chosen = {
      scopes: form.getAll("scope"),
      tools: form.getAll("tool"),
      toolsShown: form.get("tools_shown") === "1",
      cap: (form.get("cap") ?? "").trim(),
      window: form.get("window") ?? "",
      days: form.get("days") ?? "",
      agentPolicy: (form.get("agent_policy") ?? "").trim(),
    };
    // Signed in through the identity provider: its ticket (checked again, and used up, once the form is good).
    const ticket = form.get("ticket") ?? "";
    const viaProvider = ticket ? await peekConsentTicket(services, ticket, id) : undefined;
    if (ticket && !viaProvider) return errorPage(400, "This sign-in has expired", "Go back to the application and connect again.");
    const signedInExtra = viaProvider ? signedInView(ticket, viaProvider) : {};
    const again = (status: number, message: string) =>
      html(ConsentPage(consentView(ctx, id, p, { message, chosen, ...signedInExtra })), status);
    // Everything the form alone decides first: a one-time link is used up by the sign-in, so it comes last.
    const scopes = [...new Set(chosen.scopes)];
    if (scopes.length === 0) return again(400, "Pick at least one thing it may do.");
    const notAsked = scopes.filter((s) => !p.scopes.includes(s));
    if (notAsked.length) return again(400, `The client did not ask for: ${notAsked.join(", ")}.`);
    if (!usdAmount.safeParse(chosen.cap).success || usdToAtomic(chosen.cap) <= 0n)
      return again(400, 'cap: expected a USD amount above 0, like "5.00".');
    const window = CAP_WINDOWS.find((w) => w === chosen.window);
    if (!window) return again(400, "window: choose day, month or the grant's whole life.");
    // The tools within the chosen scopes (a form without the tool boxes allows them all); all of them: no list.
    const offered = scopes.flatMap((s) => toolsByScope()[s as McpScope] ?? []);
    const picked = offered.filter((t) => chosen.tools.includes(t));
    if (chosen.toolsShown && offered.length > 0 && picked.length === 0) return again(400, "Pick at least one tool.");
    const tools = chosen.toolsShown && picked.length < offered.length ? picked : undefined;
    const days = Number(chosen.days);
    if (!Number.isInteger(days) || days < 1 || days > config.maxGrantDays)
      return again(400, `days: a whole number from 1 to ${config.maxGrantDays}.`);
    const fromTicket = viaProvider ? services.directory.get(viaProvider.tenant) : undefined;
    const byKey = viaProvider ? undefined : await signIn(services, (form.get("credential") ?? "").trim());
    const tenant = viaProvider ? (fromTicket?.enabled ? fromTicket : undefined) : byKey?.tenant;
    if (!tenant) return again(401, viaProvider ? `Tenant "${viaProvider.tenant}" is not live here.` : "That key or link cannot sign in.");
    const lacking = scopes.filter((s) => !(tenant.scopes as string[]).includes(s));
    if (lacking.length) return again(403, `Tenant "${tenant.id}" does not have the scope ${lacking.join(", ")}.`);
    // The agent policy picked: one of the tenant's named policies (known only once signed in), or none.
    const agentPolicy = chosen.agentPolicy || undefined;
    if (agentPolicy !== undefined && !Object.hasOwn(tenant.agentPolicies ?? {}, agentPolicy)) {
      const names = Object.keys(tenant.agentPolicies ?? {});
      return again(
        400,
        `Tenant "${tenant.id}" has no agent policy "${agentPolicy}"; ${names.length ? `it has: ${names.join(", ")}` : "it has none (leave the field empty)"}.`,
      );
    }
    if (viaProvider && !(await takeConsentTicket(services, ticket, id)))
      return errorPage(400, "This sign-in has expired", "Go back to the application and connect again.");
    if ((await store.takePending(id)) === undefined)
      return errorPage(400, "This request has expired", "Go back to the application and connect again.");
    const now = services.now();
    const code = randomToken();
    const record: OAuthCode = {
      grantId: `grt_${randomToken(18)}`,
      tenant: tenant.id,
      clientId: p.clientId,
      clientName: p.clientName,
      redirectHost: new URL(p.redirectUri).host || new URL(p.redirectUri).protocol,
      redirectUri: p.redirectUri,
      codeChallenge: p.codeChallenge,
      scopes,
      ...(tools ? { tools } : {}),
      ...(agentPolicy ? { agentPolicy } : {}),
      cap: usdToAtomic(chosen.cap).toString(),
      capWindow: window,
      resource: p.resource,
      expiresAt: now + days * 86_400_000,
      // The credential tree: the grant dies with the key that consented (or names the person who did).
      ...(byKey ? { parentKey: byKey.parentKey } : {}),
      ...(viaProvider ? { person: viaProvider.actor, personRole: "tenant" as const } : {}),
    };
    await store.putCode(await sha256url(code), record, config.codeTtlSeconds * 1000);
    services.logger.info("oauth consent", { requestId: c.get("requestId"), tenant: tenant.id, client: p.clientId, grant: record.grantId });
    if (viaProvider)
      await audit(
        services,
        { tenant: tenant.id, person: viaProvider.actor, requestId: c.get("requestId") },
        "grant.consent",
        `grant:${tenant.id}/${record.grantId}`,
        undefined,
        { via: "oidc", client: p.clientId, scopes, cap: chosen.cap, capWindow: window, ...(agentPolicy ? { agentPolicy } : {}) },
      );
    return redirectTo(p.redirectUri, { code, state: p.state, iss });
  };
}
