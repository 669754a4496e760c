// An upstream's own refusal reaches an MCP client in the upstream's words: its `message` (or `error`, or a text body)
// and its `code`, never a generic "The gateway answered 404."; the gateway's own refusals keep the gateway's code; and
// nothing the gateway holds (the upstream key, the upstream's host) passes through in them.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";

const UPSTREAM_KEY = `upk_${randomBytes(12).toString("hex")}`;
let upstream: Server;
let upstreamHost: string;
let gw: Awaited<ReturnType<typeof startTestGateway>>;
let key: string;
let client: Client;

/** The upstream: POST /api/scrape refuses, in the shape the requested URL names. */
function refusing(): Server {
  return createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const url = String((JSON.parse(Buffer.concat(chunks).toString() || "{}") as { url?: string }).url ?? "");
      const kind = url.split("/").pop();
      if (kind === "message") {
        res.writeHead(422, { "content-type": "application/json" });
        res.end(
          JSON.stringify({
            message: `The page could not be scraped (worker ${upstreamHost}, key ${UPSTREAM_KEY})`,
            code: "scrape_refused",
          }),
        );
      } else if (kind === "error") {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: "Job queue not found" }));
      } else {
        res.writeHead(404, { "content-type": "text/plain" });
        res.end(`No such route on http://${upstreamHost}/api/scrape`);
      }
    });
  });
}

beforeAll(async () => {
  upstream = refusing();
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", () => r()));
  upstreamHost = `127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  key = generateTenantKey();
  gw = await startTestGateway(
    {
      upstream: { baseUrl: `http://${upstreamHost}` },
      tenants: [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }], scopes: ["jobs"] }],
    },
    { upstreamApiKey: UPSTREAM_KEY, tokenSecret: randomBytes(32).toString("hex") },
  );
  client = new Client({ name: "refusals", version: "1.0.0" });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${gw.port}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
}, 60_000);

afterAll(async () => {
  await client?.close().catch(() => {});
  await gw?.close();
  upstream?.closeAllConnections();
  await new Promise((r) => upstream?.close(r));
});

async function refusal(args: Record<string, unknown>) {
  const r = (await client.callTool({ name: "scrape", arguments: args })) as CallToolResult;
  expect(r.isError).toBe(true);
  const text = (r.content.find((p) => p.type === "text") as { text: string }).text;
  return { error: JSON.parse(text) as Record<string, unknown>, text };
}

describe("an upstream's refusal through MCP", () => {
  it("carries the upstream's message and code, with the upstream's key and host scrubbed", async () => {
    const { error, text } = await refusal({ url: "https://example.com/message" });
    expect(error).toMatchObject({ status: 422, code: "scrape_refused", message: expect.stringContaining("The page could not be scraped") });
    expect(text).not.toContain(UPSTREAM_KEY);
    expect(text).not.toContain(upstreamHost);
  });

  it("reads an `error` field or a text body as the message when there is no `message`", async () => {
    expect((await refusal({ url: "https://example.com/error" })).error).toMatchObject({
      status: 404,
      code: "http_404",
      message: "Job queue not found",
    });
    const { error, text } = await refusal({ url: "https://example.com/text" });
    expect(error).toMatchObject({ status: 404, code: "http_404", message: expect.stringContaining("No such route") });
    expect(text).not.toContain(upstreamHost);
    expect(text).not.toContain("The gateway answered");
  });

  it("keeps the gateway's own code where the gateway refused", async () => {
    const { error } = await refusal({ url: "https://example.com/x", options: { notAField: true } });
    expect(error).toMatchObject({ status: 400, code: "unknown_field" });
  });
});
