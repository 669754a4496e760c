// Budget alert webhooks: the event shapes, their Stripe-style signature, and delivery to every receiver of a tenant
// with retries. Shared by the alerts (thresholds) and the kill switch (exhaustion).
import type { Context } from "hono";
import type { GatewayServices } from "../services.js";
import type { Tenant } from "../tenants.js";
import type { BudgetWindow } from "../state/types.js";

const enc = new TextEncoder();

export type BudgetEvent =
  | { type: "budget.threshold"; window: BudgetWindow; period: string; threshold: number; spent: string; limit: string }
  | { type: "budget.exhausted"; window: BudgetWindow; period: string; onExhausted: string }
  /** A credits settlement above its hold, recorded whole (period: the ledger entry). */
  | {
      type: "credits.over_hold";
      window: "total";
      period: string;
      route: string;
      resource: string | null;
      held: string;
      settled: string;
      settledFrom: string;
    }
  /** The team's usage and the ledger's credit spend differ past credits.driftAlertUsd (period: the day it was seen). */
  | { type: "credits.drift"; window: "total"; period: string; driftUsd: string; thresholdUsd: string; teamUsd: string; ledgerUsd: string };

/** `t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`, as Stripe signs its webhooks. */
async function signWebhook(secret: string, body: string, t: number): Promise<string> {
  const key = await crypto.subtle.importKey("raw", enc.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(`${t}.${body}`)));
  return `t=${t},v1=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** What a receiver does: recompute the signature and refuse one older than `toleranceSeconds`. */
export async function verifyWebhook(
  secret: string,
  body: string,
  header: string | null,
  nowSeconds: number,
  toleranceSeconds = 300,
): Promise<boolean> {
  const t = Number(header?.match(/(?:^|,)t=(\d+)/)?.[1]);
  if (!Number.isFinite(t) || Math.abs(nowSeconds - t) > toleranceSeconds) return false;
  return (await signWebhook(secret, body, t)) === header;
}

const receiversOf = (services: GatewayServices, tenant: Tenant) => [
  ...new Set([...services.config.alerts.webhooks, ...(tenant.alerts?.webhooks ?? [])]),
];

async function post(services: GatewayServices, url: string, id: string, body: string): Promise<number | string> {
  const headers = new Headers({ "content-type": "application/json", "user-agent": "tollgate-alerts", "tollgate-event-id": id });
  const secret = services.secrets.webhookSecret;
  if (secret) headers.set("tollgate-signature", await signWebhook(secret, body, Math.floor(services.now() / 1000)));
  try {
    const res = await services.upstream.transport.request({ url, method: "POST", headers, body, signal: AbortSignal.timeout(10_000) });
    await res.body?.cancel().catch(() => {});
    return res.status;
  } catch {
    return "unreachable";
  }
}

/** Delivers one event to one receiver, retrying failures (network errors, 5xx, 429) with exponential backoff. */
async function deliver(services: GatewayServices, url: string, id: string, body: string): Promise<void> {
  const { maxAttempts, initialBackoffMs } = services.config.alerts;
  for (let attempt = 1; attempt <= maxAttempts; attempt++) {
    const status = await post(services, url, id, body);
    if (typeof status === "number" && status < 300) return;
    const retryable = typeof status !== "number" || status >= 500 || status === 429 || status === 408;
    if (!retryable || attempt === maxAttempts) {
      services.logger.error("alert webhook not delivered", { event: id, status, attempts: attempt, receiver: new URL(url).host });
      return;
    }
    const delay = initialBackoffMs * 2 ** (attempt - 1);
    await new Promise((r) => setTimeout(r, delay * (0.8 + Math.random() * 0.4)));
  }
}

/**
 * Records the event in the audit log (the console lists every alert raised, with receivers or not) and sends it to
 * every receiver of the tenant, both beside the request `c` (services.background). The caller has already won its
 * once-marker.
 */
export function deliverBudgetEvent(services: GatewayServices, tenant: Tenant, event: BudgetEvent, c?: Context): void {
  const receivers = receiversOf(services, tenant);
  const suffix = event.type === "budget.threshold" ? `:${event.threshold}` : "";
  const id = `${event.type}:${tenant.id}:${event.window}:${event.period}${suffix}`;
  const record = services.stores.audit.append({
    at: services.now(),
    actor: "system",
    action: `alert.${event.type}`,
    target: `tenant:${tenant.id}`,
    after: { id, ...event, receivers: receivers.length },
  });
  services.background(c, record, "audit record of a budget alert");
  if (!receivers.length) return;
  const body = JSON.stringify({ id, ...event, tenant: tenant.id, at: new Date(services.now()).toISOString() });
  services.logger.info("budget alert", { event: id });
  for (const url of receivers) services.background(c, deliver(services, url, id, body), "budget alert webhook delivery");
}
