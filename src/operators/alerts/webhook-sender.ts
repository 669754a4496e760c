// How an alert webhook leaves the gateway: one POST, its status back. Web fetch here (Workers: the caller has checked
// the URL, IP literals included; names cannot be resolved first there); the Node entry passes its own, which checks
// every resolved address and connects to the one it checked (src/host/node/webhook-sender.ts).

/** Sends one signed POST to a receiver; resolves its status, rejects (with a message fit for a log) when refused or unreachable. */
export type WebhookSender = (req: { url: string; headers: Headers; body: string; timeoutMs: number }) => Promise<number>;

/** Redirects are not followed (`manual`): a 3xx is a failed delivery. */
export const fetchWebhookSender: WebhookSender = async ({ url, headers, body, timeoutMs }) => {
  const res = await fetch(url, { method: "POST", headers, body, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
  await res.body?.cancel().catch(() => {});
  return res.status;
};
