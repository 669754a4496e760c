// Alert webhooks: every alert is recorded in the audit log and put in the outbox of the state backend (one message per
// receiver), then delivered by whichever instance claims it: signed per the Standard Webhooks spec (`webhook-id`,
// `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`), retried with
// exponential backoff across restarts and instances, given up after alerts.maxAttempts (a dead letter), never sent
// to a destination the rules refuse (./destinations.ts), redirects not followed.
import type { Context } from "hono";
import type { GatewayServices } from "../../services.js";
import type { Tenant } from "../../identity/tenants.js";
import type { OutboxMessage } from "../../state/types.js";
import type { MoneyEvent } from "../../payments/index.js";
import { DestinationRules } from "../../web/destinations.js";
import { fetchWebhookSender } from "./webhook-sender.js";

/**
 * What raising and delivering alerts touches: the alert config and receivers (config, directory), the audit log and
 * outbox (stores), the clock, log, metrics, background work and close hooks, this instance's id, and the sender.
 */
export type AlertServices = Pick<
  GatewayServices,
  "config" | "directory" | "stores" | "now" | "logger" | "metrics" | "background" | "onClose" | "instanceId" | "webhookSender" | "webhooks"
>;

const enc = new TextEncoder();

/** An alert as raised: its id (the `webhook-id` every receiver gets, stable across retries), type and details. */
export interface AlertEvent {
  id: string;
  type: string;
  /** The tenant it concerns; fleet alerts (upstream, wallet, state) have none and go to the global receivers only. */
  tenant?: string;
  data: Record<string, unknown>;
  /** One line for people (the Slack body, the log). */
  summary: string;
}

const TIMEOUT_MS = 10_000;
/** A claim outlives the slowest delivery (its timeout) with room to settle. */
const LEASE_MS = 60_000;
const CLAIM_BATCH = 20;
const MAX_BACKOFF_MS = 3_600_000;
/** How long after a retry's due time its pass runs, so the message is surely due when the pass claims it. */
const RETRY_MARGIN_MS = 25;
/** Retries due within this long are awaited by a closing gateway (it waits 2 s for background work). */
const SHORT_RETRY_MS = 1_500;

/** The HMAC key of a `whsec_<base64>` secret (Standard Webhooks); any other secret is used as its UTF-8 bytes. */
function secretKey(secret: string): Uint8Array {
  if (!secret.startsWith("whsec_")) return enc.encode(secret);
  return Uint8Array.from(atob(secret.slice("whsec_".length)), (ch) => ch.charCodeAt(0));
}

/** `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`. */
async function signStandardWebhook(secret: string, id: string, timestamp: number, body: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", secretKey(secret) as BufferSource, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(`${id}.${timestamp}.${body}`)));
  return `v1,${btoa(String.fromCharCode(...mac))}`;
}

interface Receiver {
  url: string;
  format: "standard" | "slack";
}

function receiversOf(services: AlertServices, tenant: Tenant | undefined): Receiver[] {
  const a = services.config.alerts;
  const std = new Set([...a.webhooks, ...(tenant?.alerts?.webhooks ?? [])]);
  const slack = new Set([...a.slack, ...(tenant?.alerts?.slack ?? [])]);
  return [
    ...[...std].map((url) => ({ url, format: "standard" as const })),
    ...[...slack].map((url) => ({ url, format: "slack" as const })),
  ];
}

/** FNV-1a of a URL: a receiver's part of an outbox id (the URL itself may carry a token). */
function urlKey(url: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < url.length; i++) h = Math.imul(h ^ url.charCodeAt(i), 0x01000193);
  return (h >>> 0).toString(16).padStart(8, "0");
}

function bodyOf(event: AlertEvent, format: Receiver["format"], at: number): string {
  if (format === "slack") return JSON.stringify({ text: `Tollgate alert (${event.type}): ${event.summary}` });
  return JSON.stringify({
    type: event.type,
    timestamp: new Date(at).toISOString(),
    data: { id: event.id, tenant: event.tenant, ...event.data },
  });
}

/**
 * Records the alert in the audit log (the console lists every alert raised, receivers or not) and puts one message per
 * receiver in the outbox, then starts a delivery pass; all beside the request `c`. The caller has already won the
 * alert's once-marker, so this runs on one instance per event.
 */
export function raiseAlert(services: AlertServices, event: AlertEvent, c?: Context, skip?: string): void {
  const tenant = event.tenant ? services.directory.get(event.tenant) : undefined;
  const receivers = receiversOf(services, tenant).filter((r) => r.url !== skip);
  const now = services.now();
  const work = (async () => {
    await services.stores.audit.append({
      at: now,
      actor: "system",
      action: `alert.${event.type}`,
      target: event.tenant ? `tenant:${event.tenant}` : "gateway",
      after: { id: event.id, type: event.type, ...event.data, receivers: receivers.length },
    });
    services.logger.info("alert", { event: event.id, type: event.type, summary: event.summary });
    services.metrics.alert(event.type);
    for (const r of receivers)
      await services.stores.outbox.enqueue({
        id: `${event.id}|${urlKey(r.url)}`,
        event: event.id,
        destination: r.url,
        body: bodyOf(event, r.format, now),
        format: r.format,
        nextAt: now,
        createdAt: now,
      });
  })();
  services.background(
    c,
    work.then(() => webhookDispatcher(services).pump()),
    "alert record and delivery",
  );
}

/** The money events that become alerts (all but savings, which are counted: ./money-listener.ts). */
export type AlertedEvent = Exclude<MoneyEvent, { type: "savings" }>;

/** A money event announced by payments (./money-listener.ts): a budget threshold crossed, a window exhausted… */
export function deliverBudgetEvent(services: AlertServices, tenant: Tenant, event: AlertedEvent, c?: Context): void {
  const suffix =
    event.type === "budget.threshold" ? `:${event.threshold}` : event.type === "credits.drift" && event.account ? `:${event.account}` : "";
  const { type, ...data } = event;
  const summary =
    event.type === "budget.threshold"
      ? `tenant ${tenant.id} reached ${event.threshold} % of its ${event.window} budget ($${event.spent} of $${event.limit})`
      : event.type === "budget.exhausted"
        ? `tenant ${tenant.id} exhausted its ${event.window} budget (${event.onExhausted})`
        : event.type === "credits.over_hold"
          ? `tenant ${tenant.id}: ${event.route} settled at $${event.settled}, above its $${event.held} hold (from ${event.settledFrom})`
          : event.type === "credits.report_refused"
            ? `tenant ${tenant.id}: ${event.route} reported ${event.field} ${event.reported} (${event.reason}, refused); its entry stands at $${event.settled}`
            : `${event.account ? `upstream account ${event.account}: ` : ""}the team's credit usage and the ledger differ by $${event.driftUsd} (alert past $${event.thresholdUsd})`;
  raiseAlert(services, { id: `${type}:${tenant.id}:${event.window}:${event.period}${suffix}`, type, tenant: tenant.id, data, summary }, c);
}

/** Delivers what is due in the outbox, one pass at a time per instance. */
export class WebhookDispatcher {
  private running: Promise<void> | undefined;
  private again = false;
  private readonly rules: DestinationRules;

  private readonly timers = new Set<ReturnType<typeof setTimeout>>();
  private closed = false;

  /**
   * The signing secret (TOLLGATE_WEBHOOK_SECRET), held here and nowhere else past the entry: an ECMAScript private
   * field, so nothing that walks the services (a debug dump, a log of an object) can reach it.
   */
  #secret: string | undefined;

  constructor(
    private readonly services: AlertServices,
    secret: string | undefined,
  ) {
    this.#secret = secret;
    this.rules = new DestinationRules(services.config.alerts);
    services.onClose(() => {
      this.closed = true;
      for (const t of this.timers) clearTimeout(t);
      this.timers.clear();
    });
  }

  /** A rotated signing secret (its file changed): deliveries from now on are signed with it. */
  setSecret(secret: string): void {
    this.#secret = secret;
  }

  /**
   * A retry due before the next timed pass gets a pass of its own: tracked as background work when it is due within
   * 1.5 s (a draining gateway waits for it), else on a timer the gateway's close clears (the outbox keeps the message).
   */
  private retrySoon(due: number): void {
    if (this.closed || due >= this.services.config.alerts.evaluateSeconds * 1000) return;
    // A timer may fire a little before the clock reaches the message's due time; a pass then would find nothing due.
    const ms = due + RETRY_MARGIN_MS;
    if (ms <= SHORT_RETRY_MS) {
      this.services.background(
        undefined,
        new Promise((r) => setTimeout(r, ms)).then(() => this.pump()),
        "alert webhook retry",
      );
      return;
    }
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.services.background(undefined, this.pump(), "alert webhook retry");
    }, ms);
    (timer as { unref?: () => void }).unref?.();
    this.timers.add(timer);
  }

  /** Runs a pass (or, while one runs, another right after it); never rejects. */
  pump(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.pass();
        } while (this.again);
      } catch (err) {
        this.services.logger.error("webhook delivery pass failed", { error: String((err as Error)?.message ?? err) });
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  private async pass(): Promise<void> {
    const { outbox } = this.services.stores;
    for (;;) {
      const batch = await outbox.claim(this.services.instanceId, this.services.now(), LEASE_MS, CLAIM_BATCH);
      if (!batch.length) return;
      await Promise.all(batch.map((m) => this.deliver(m)));
      if (batch.length < CLAIM_BATCH) return;
    }
  }

  private async send(m: OutboxMessage): Promise<string | undefined> {
    const problem = this.rules.urlProblem(m.destination);
    if (problem) return `refused: ${problem}`;
    const ts = Math.floor(this.services.now() / 1000);
    const headers = new Headers({
      "content-type": "application/json",
      "user-agent": "tollgate-alerts",
      "webhook-id": m.event,
      "webhook-timestamp": String(ts),
    });
    if (this.#secret) headers.set("webhook-signature", await signStandardWebhook(this.#secret, m.event, ts, m.body));
    const sender = this.services.webhookSender ?? fetchWebhookSender;
    try {
      const status = await sender({ url: m.destination, headers, body: m.body, timeoutMs: TIMEOUT_MS });
      return status >= 200 && status < 300 ? undefined : `status ${status}`;
    } catch (err) {
      return String((err as Error)?.message ?? err);
    }
  }

  private async deliver(m: OutboxMessage): Promise<void> {
    const { outbox } = this.services.stores;
    const owner = this.services.instanceId;
    const receiver = safeHost(m.destination);
    const error = await this.send(m);
    if (error === undefined) {
      await outbox.ack(m.id, owner);
      this.services.metrics.webhookDelivery("delivered");
      return;
    }
    const attempts = m.attempts + 1;
    const { maxAttempts, initialBackoffMs, rules } = this.services.config.alerts;
    if (attempts >= maxAttempts || error.startsWith("refused:")) {
      this.services.metrics.webhookDelivery("given_up");
      await outbox.bury(m.id, owner, error);
      this.services.logger.error("alert webhook not delivered", { event: m.event, receiver, attempts, error });
    } else {
      this.services.metrics.webhookDelivery("failed");
      const backoff = Math.min(initialBackoffMs * 2 ** (attempts - 1), MAX_BACKOFF_MS) * (0.8 + Math.random() * 0.4);
      await outbox.retry(m.id, owner, this.services.now() + backoff, error);
      this.services.logger.info("alert webhook retry", { event: m.event, receiver, attempts, error });
      this.retrySoon(backoff);
    }
    // A receiver failing is an alert of its own, to the other receivers, once per receiver per hour fleet-wide.
    const failing = rules.webhookFailing;
    if (failing && attempts >= failing.afterAttempts && !m.event.startsWith("webhook.failing:")) {
      const hour = Math.floor(this.services.now() / 3_600_000);
      const id = `webhook.failing:${urlKey(m.destination)}:${hour}`;
      if (await this.services.stores.kv.setIfAbsent(`alert:${id}`, owner, 7_200_000))
        raiseAlert(
          this.services,
          { id, type: "webhook.failing", data: { receiver, attempts, error }, summary: `deliveries to ${receiver} are failing (${error})` },
          undefined,
          m.destination,
        );
    }
  }
}

/** A receiver's host for logs and alerts (its path or query may carry a token). */
function safeHost(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "(invalid)";
  }
}

/**
 * The gateway's dispatcher (services.webhooks, built by createGateway with the webhook signing secret, its only holder;
 * a rotated secret is handed to it with setSecret): raiseAlert starts a pass, and the Node entry's timer (or a request
 * on Workers) runs one when due.
 */
export function webhookDispatcher(services: Pick<GatewayServices, "webhooks">): WebhookDispatcher {
  return services.webhooks;
}
