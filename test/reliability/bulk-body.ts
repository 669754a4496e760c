// Sends a large request body over node:http without holding it: 1 MiB chunks written as the socket drains, with a
// declared Content-Length or chunked. Answers the status (or -1 when the gateway hung up before answering).
import { request } from "node:http";

const MIB = 1024 * 1024;
const CHUNK = Buffer.alloc(MIB, 0x20);

export interface BulkBody {
  url: string;
  method?: string;
  headers?: Record<string, string>;
  mib: number;
  /** Declare Content-Length (true) or send chunked (false). */
  declared: boolean;
  /** The first bytes of the body (e.g. `{"query":"`), the rest is spaces. */
  prefix?: string;
}

export function sendBulkBody(o: BulkBody): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const u = new URL(o.url);
    const headers: Record<string, string> = { "content-type": "application/json", ...o.headers };
    if (o.declared) headers["content-length"] = String(o.mib * MIB);
    let settled = false;
    const done = (status: number, body = "") => {
      if (settled) return;
      settled = true;
      resolve({ status, body });
    };
    const req = request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method: o.method ?? "POST", headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (d: string) => (body += d.slice(0, 4096)));
      res.on("end", () => done(res.statusCode ?? 0, body));
      res.on("error", () => done(res.statusCode ?? 0, body));
    });
    req.on("error", () => setTimeout(() => done(-1), 50));
    let sent = 0;
    const head = o.prefix ? Buffer.from(o.prefix) : undefined;
    const pump = () => {
      while (sent < o.mib && !req.destroyed) {
        const chunk = sent === 0 && head ? Buffer.concat([head, CHUNK.subarray(head.length)]) : CHUNK;
        sent++;
        if (!req.write(chunk)) {
          req.once("drain", pump);
          return;
        }
      }
      if (!req.destroyed) req.end();
    };
    pump();
  });
}
