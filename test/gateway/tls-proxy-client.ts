// The client side of tls-proxy.test.ts, run as its own process so NODE_EXTRA_CA_CERTS (read at start-up) trusts the
// test's certificate: the unmodified SDK and puppeteer-core over https/wss only, printing one JSON line of findings.
import { request as httpsRequest } from "node:https";
import { Hyperbrowser } from "@hyperbrowser/sdk";
import puppeteer from "puppeteer-core";

const gateway = process.env.TG_GATEWAY!;
const apiKey = process.env.TG_KEY!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const out: Record<string, unknown> = {};

/** GET an exposed-port URL over TLS: connect to nginx on 127.0.0.1, verify its certificate as `localhost`, name the port host in Host. */
function portGet(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; headers: Record<string, unknown> }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      { host: "127.0.0.1", port: u.port, servername: "localhost", path: u.pathname + u.search, headers: { host: u.host, ...headers } },
      (res) => {
        let body = "";
        res.on("data", (d) => (body += d));
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body, headers: res.headers }));
      },
    );
    req.on("error", reject);
    req.end();
  });
}

async function step(name: string, fn: () => Promise<unknown>) {
  try {
    out[name] = await fn();
  } catch (err) {
    out[name] = { error: String((err as Error)?.message ?? err) };
  }
}

const client = new Hyperbrowser({ apiKey, baseUrl: gateway });
const sbx = await client.sandboxes.create({ imageName: "node" });
out.runtimeBaseUrl = sbx.runtime.baseUrl;

await step("exec", async () => (await sbx.exec("echo over-tls")).stdout);

await step("terminal", async () => {
  const t = await sbx.terminal.create({ command: "bash", args: ["--norc", "--noprofile"], rows: 24, cols: 80 });
  const conn = await t.attach();
  let seen = "";
  const reader = (async () => {
    for await (const e of conn.events()) if (e.type === "output") seen += (e as { data: string }).data;
  })();
  await conn.write("echo wss-$((6*7))\r");
  for (let i = 0; i < 100 && !seen.includes("wss-42\r\n"); i++) await sleep(50);
  await conn.close();
  await reader;
  await t.kill().catch(() => {});
  return seen.includes("wss-42\r\n") ? "wss-42" : seen;
});

await step("port", async () => {
  await sbx.processes.start(`node -e 'require("http").createServer((q,r)=>r.end("port:"+q.url)).listen(3300)'`);
  const e = await sbx.expose({ port: 3300 });
  let res = await portGet(`${e.url}hi`);
  for (let i = 0; i < 50 && res.status !== 200; i++) await sleep(100), (res = await portGet(`${e.url}hi`));
  return { url: e.url, status: res.status, body: res.body };
});

await step("authPort", async () => {
  await sbx.processes.start(`node -e 'require("http").createServer((q,r)=>r.end("auth:"+q.url)).listen(3301)'`);
  const e = await sbx.expose({ port: 3301, auth: true });
  const boot = await portGet(e.browserUrl!);
  const setCookie = String(boot.headers["set-cookie"] ?? "");
  const cookie = setCookie.split(";")[0]!;
  let res = await portGet(e.url, { cookie });
  for (let i = 0; i < 50 && res.status !== 200; i++) await sleep(100), (res = await portGet(e.url, { cookie }));
  return {
    bootStatus: boot.status,
    location: boot.headers.location,
    secure: /;\s*Secure/i.test(setCookie),
    status: res.status,
    body: res.body,
  };
});

await step("session", async () => {
  const session = await client.sessions.create();
  try {
    const browser = await puppeteer.connect({ browserWSEndpoint: session.wsEndpoint, defaultViewport: null });
    const page = await browser.newPage();
    await page.goto("data:text/html,<title>through-wss</title>");
    const title = await page.title();
    await browser.disconnect();
    return { wsEndpoint: session.wsEndpoint.replace(/token=[^&]+/, "token=…"), sessionUrl: (session as any).sessionUrl, title };
  } finally {
    await client.sessions.stop(session.id).catch(() => {});
  }
});

await sbx.stop().catch(() => {});
process.stdout.write(JSON.stringify(out) + "\n");
process.exit(0);
