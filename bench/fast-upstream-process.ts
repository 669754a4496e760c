// A trivial fast upstream for bench/proxy.ts scenarios (d) and (e): answers every runtime call at once with a small JSON
// body, `POST /api/web/search` with a completed job, and `GET /api/sandbox/<id>` with a detail whose runtime is itself, so a gateway's custody finds it. Prints `READY <port>`.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

const BODY = Buffer.from(JSON.stringify({ data: [{ id: "proc_1", status: "completed", command: "true", exit_code: 0 }] }));
// A completed search job of the emulator's shape (ten results), for the cache-hit scenario's one miss.
const SEARCH = Buffer.from(
  JSON.stringify({
    jobId: "00000000-0000-4000-8000-000000000000",
    status: "completed",
    data: {
      query: "hot cached query",
      results: Array.from({ length: 10 }, (_, i) => ({
        title: `Result ${i + 1} about hot cached queries`,
        url: `https://example.com/docs/${i + 1}`,
        description: "A page of the local corpus that mentions the query terms, long enough to look like a real snippet of text.",
      })),
    },
  }),
);
let origin = "";
const server = createServer((req, res) => {
  const m = /^\/api\/sandbox\/([^/?]+)/.exec(req.url ?? "");
  if (m && req.method === "GET") {
    const detail = JSON.stringify({
      id: m[1],
      status: "active",
      token: "fast-upstream-runtime-token",
      tokenExpiresAt: new Date(Date.now() + 24 * 3600_000).toISOString(),
      runtime: { baseUrl: origin },
    });
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(detail) });
    res.end(detail);
    return;
  }
  req.resume();
  if (req.method === "POST" && req.url === "/api/web/search") {
    res.writeHead(200, { "content-type": "application/json", "content-length": SEARCH.length });
    res.end(SEARCH);
    return;
  }
  res.writeHead(200, { "content-type": "application/json", "content-length": BODY.length });
  res.end(BODY);
});
server.keepAliveTimeout = 60_000;
server.listen(0, "127.0.0.1", () => {
  const port = (server.address() as AddressInfo).port;
  origin = `http://127.0.0.1:${port}`;
  process.stdout.write(`READY ${port}\n`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
