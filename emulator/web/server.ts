// The local web on loopback: one HTTP server answering for every known host by the Host header it is sent.
import { createServer, request, type Server } from "node:http";
import type { LocalSite, SitePage } from "./site.js";

export interface LocalWebResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

export interface LocalWeb {
  /** `http://127.0.0.1:<port>`; requests to it name the site in their Host header. */
  origin: string;
  site: LocalSite;
  /**
   * Fetches `url` from the local web over loopback, the way a browser would reach that host; undefined when the host is
   * not on the local web (the caller fails the page as unresolvable: nothing ever leaves the machine).
   */
  fetch(url: string, opts?: { signal?: AbortSignal; method?: string }): Promise<LocalWebResponse | undefined>;
  close(): Promise<void>;
}

function send(res: import("node:http").ServerResponse, page: SitePage, head: boolean) {
  const body = typeof page.body === "string" ? Buffer.from(page.body) : page.body;
  res.writeHead(page.status, { "content-type": page.contentType, "content-length": String(body.length), "cache-control": "no-store" });
  res.end(head ? undefined : body);
}

export async function startLocalWeb(site: LocalSite): Promise<LocalWeb> {
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((req, res) => {
    const host = req.headers.host ?? "";
    const proto = req.headers["x-forwarded-proto"] === "https" ? "https" : "http";
    let url: URL;
    try {
      url = new URL(req.url ?? "/", `${proto}://${host}`);
    } catch {
      res.writeHead(400).end();
      return;
    }
    const page = site.page(url);
    if (!page) {
      res.writeHead(421, { "content-type": "text/plain" }).end(`${url.hostname} is not on the local web\n`);
      return;
    }
    if (!page.delayMs) return send(res, page, req.method === "HEAD");
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!res.destroyed) send(res, page, req.method === "HEAD");
    }, page.delayMs);
    timers.add(timer);
    res.on("close", () => {
      clearTimeout(timer);
      timers.delete(timer);
    });
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port));
  });
  const origin = `http://127.0.0.1:${port}`;

  return {
    origin,
    site,
    fetch(target, opts = {}) {
      let url: URL;
      try {
        url = new URL(target);
      } catch {
        return Promise.resolve(undefined);
      }
      if (!/^https?:$/.test(url.protocol) || !site.knows(url.hostname)) return Promise.resolve(undefined);
      return new Promise((resolve, reject) => {
        const req = request(
          {
            host: "127.0.0.1",
            port,
            method: opts.method ?? "GET",
            path: url.pathname + url.search,
            headers: { host: url.host, "x-forwarded-proto": url.protocol.slice(0, -1) },
            signal: opts.signal,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (c: Buffer) => chunks.push(c));
            res.on("end", () => {
              const headers: Record<string, string> = {};
              for (const [k, v] of Object.entries(res.headers)) if (typeof v === "string") headers[k] = v;
              resolve({ status: res.statusCode ?? 502, headers, body: Buffer.concat(chunks) });
            });
            res.on("error", reject);
          },
        );
        req.on("error", reject);
        req.end();
      });
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      server.closeAllConnections();
      await new Promise((r) => server.close(() => r(null)));
    },
  };
}
