// Node's alert webhook sender: one POST through the destination guard (./destination-guard.ts), which resolves the
// receiver's name itself, refuses it when any address it resolves to is in a blocked range
// (../../operators/alerts/destinations.ts), and connects to the address it checked (no second lookup a DNS rebinding
// could answer differently). No redirect is followed.
import type { DestinationPolicy } from "../../web/destinations.js";
import type { WebhookSender } from "../../operators/alerts/webhook-sender.js";
import { type DestinationGuard, DestinationUnreachable } from "../../web/destination-guard.js";
import { nodeDestinationGuard } from "./destination-guard.js";

/** A receiver's answer is read (and dropped) up to this size; a larger one is a failed delivery. */
const ANSWER_LIMIT = 1024 * 1024;

/** @example createGateway(config, { ..., webhookSender: nodeWebhookSender(config.alerts) }) */
export function nodeWebhookSender(policy: DestinationPolicy, guard: DestinationGuard = nodeDestinationGuard()): WebhookSender {
  return async ({ url, headers, body, timeoutMs }) => {
    try {
      return (await guard.fetch({ url, method: "POST", headers, body, timeoutMs, maxBytes: ANSWER_LIMIT, policy })).status;
    } catch (err) {
      // The operator's own log: the reason (refused, unreachable, timeout) is theirs to read.
      throw new Error(err instanceof DestinationUnreachable ? err.reason : err instanceof Error ? err.message : String(err));
    }
  };
}
