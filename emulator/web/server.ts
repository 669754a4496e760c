// The local web on loopback: one HTTP server answering for every known host by the Host header it is sent.
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createNetServer, type Socket } from "node:net";
import type { LocalSite, SitePage } from "./site.js";
import { localWebCert } from "./tls.js";

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
  /**
   * `--host-resolver-rules` for a browser that reaches the local web by name (sessions' browsers, which clients drive
   * over CDP, so no request interception): every local-web host maps to this server (plain HTTP and TLS share its
   * port), `localhost` and 127.0.0.1 stay themselves, any other name does not resolve.
   */
  browserArgs: string[];
  close(): Promise<void>;
}

function send(res: import("node:http").ServerResponse, page: SitePage, head: boolean) {
  const body = typeof page.body === "string" ? Buffer.from(page.body) : page.body;
  res.writeHead(page.status, { "content-type": page.contentType, "content-length": String(body.length), "cache-control": "no-store" });
  res.end(head ? undefined : body);
}

export async function startLocalWeb(site: LocalSite): Promise<LocalWeb> {
  const timers = new Set<NodeJS.Timeout>();
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const host = req.headers.host ?? "";
    const tls = (req.socket as { encrypted?: boolean }).encrypted === true;
    const proto = tls || req.headers["x-forwarded-proto"] === "https" ? "https" : "http";
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
  };
  // An idle kept-alive connection is closed by the client, never by this server: Node 20's global agent (web.fetch
  // below) drops a free socket after 5 s, the server's default idle timeout is 5 s too, and a server closing one as a
  // request went out reset that request (the page then failed as if its host could not be resolved).
  const KEEP_ALIVE_MS = 65_000;
  const server: Server = createServer(handle);
  server.keepAliveTimeout = KEEP_ALIVE_MS;
  // One port for both schemes: a TLS client hello starts with 0x16, anything else is plain HTTP. The certificate is
  // self-signed; browsers trust exactly its key (--ignore-certificate-errors-spki-list), nothing else.
  const cert = await localWebCert();
  const secure = cert ? createHttpsServer({ key: cert.key, cert: cert.cert }, handle) : undefined;
  if (secure) secure.keepAliveTimeout = KEEP_ALIVE_MS;
  const sockets = new Set<Socket>();
  const front = createNetServer((sock) => {
    sockets.add(sock);
    sock.once("close", () => sockets.delete(sock));
    sock.on("error", () => {});
    sock.once("data", (first: Buffer) => {
      sock.pause();
      sock.unshift(first);
      (first[0] === 0x16 && secure ? secure : server).emit("connection", sock);
      process.nextTick(() => sock.resume());
    });
  });
  const port = await new Promise<number>((resolve, reject) => {
    front.once("error", reject);
    front.listen(0, "127.0.0.1", () => resolve((front.address() as { port: number }).port));
  });
  const origin = `http://127.0.0.1:${port}`;
  const target = `127.0.0.1:${port}`;
  const rules = [
    ...site.hosts().flatMap((h) => [`MAP ${h} ${target}`, `MAP www.${h} ${target}`]),
    "MAP * ~NOTFOUND",
    "EXCLUDE 127.0.0.1",
    "EXCLUDE localhost",
    "EXCLUDE *.localhost",
  ];
  const browserArgs = [
    `--host-resolver-rules=${rules.join(", ")}`,
    ...(cert ? [`--ignore-certificate-errors-spki-list=${cert.spki}`] : []),
    "--dns-prefetch-disable",
  ];

  return {
    origin,
    site,
    browserArgs,
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
      for (const sock of sockets) sock.destroy();
      await new Promise((r) => front.close(() => r(null)));
    },
  };
}
