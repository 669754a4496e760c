// A local webhook receiver on 127.0.0.1: records every delivery (headers and body), can fail the first attempts and
// can answer slowly. A GET answers what it has received, for tests that run elsewhere (inside workerd).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

export interface Delivery {
  id: string;
  signature: string | undefined;
  timestamp: string | undefined;
  /** The Standard Webhooks headers as sent, for a verifier. */
  headers: Record<string, string>;
  body: string;
  json: any;
  status: number;
  /** When the receiver sent its answer (epoch ms). */
  answeredAt?: number;
}

export interface WebhookReceiver {
  url: string;
  deliveries: Delivery[];
  /** Deliveries answered 2xx, one per accepted event. */
  accepted(): Delivery[];
  close(): Promise<void>;
}

/**
 * `failFirst`: answer 503 to the first N attempts of each event id. `delayMs`: hold every answer this long. `port`: listen
 * there (a receiver brought back where the gateway expects it).
 */
export async function startWebhookReceiver(opts: { failFirst?: number; delayMs?: number; port?: number } = {}): Promise<WebhookReceiver> {
  const deliveries: Delivery[] = [];
  const attempts = new Map<string, number>();
  const server: Server = createServer((req, res) => {
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ deliveries }));
      return;
    }
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const id = String(req.headers["webhook-id"] ?? "");
      const n = (attempts.get(id) ?? 0) + 1;
      attempts.set(id, n);
      const status = n <= (opts.failFirst ?? 0) ? 503 : 200;
      const delivery: Delivery = {
        id,
        signature: req.headers["webhook-signature"] as string | undefined,
        timestamp: req.headers["webhook-timestamp"] as string | undefined,
        headers: {
          "webhook-id": id,
          "webhook-timestamp": String(req.headers["webhook-timestamp"] ?? ""),
          "webhook-signature": String(req.headers["webhook-signature"] ?? ""),
        },
        body,
        json: JSON.parse(body),
        status,
      };
      deliveries.push(delivery);
      setTimeout(() => {
        delivery.answeredAt = Date.now();
        res.writeHead(status, { "content-type": "application/json" }).end("{}");
      }, opts.delayMs ?? 0);
    });
  });
  await new Promise<void>((r) => server.listen(opts.port ?? 0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    deliveries,
    accepted: () => deliveries.filter((d) => d.status === 200),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
