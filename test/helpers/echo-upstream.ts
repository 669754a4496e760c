// A bare HTTP server that records what the gateway sent it and answers with it as JSON (for header-level tests).
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { randomUUID } from "node:crypto";

export interface Recorded {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

export async function startEchoUpstream() {
  const seen: Recorded[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const rec = { method: req.method!, url: req.url!, headers: req.headers, body: Buffer.concat(chunks).toString() };
      seen.push(rec);
      res.writeHead(200, { "content-type": "application/json", "x-request-id": String(req.headers["x-request-id"] ?? "") });
      // Creations name what they made, as the upstream does (`id`, `jobId` for jobs).
      const made = randomUUID();
      res.end(JSON.stringify({ ok: true, path: req.url, ...(req.method === "POST" ? { id: made, jobId: made, status: "pending" } : {}) }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
