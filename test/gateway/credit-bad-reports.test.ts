// Settlements that survive a bad answer: a stub upstream (node:http on 127.0.0.1) reports a session's or a job's
// credits as 1e303, negative, NaN (bare, as Python's JSON writes it, and as a string), a string, a figure far above
// the hold, or an answer that is not JSON at all. The gateway never answers 5xx for it, settles every hold (to the
// estimate), flags the ledger entry with why and raises one `credits.report_refused` alert per entry, delivered to a
// webhook receiver; a figure within credits.maxReportMultiple × the hold is still booked as reported.
import { randomBytes, randomUUID } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startTestGateway } from "../helpers/gateway.js";
import { startWebhookReceiver, type WebhookReceiver } from "../operators/webhook-receiver.js";
import type { LedgerEntry } from "../../src/state/types.js";

const key = generateTenantKey();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the stub says of each resource's or job's credits: the raw JSON text of the value (or a whole body). */
const reports = new Map<string, string>();
/** The report the next creation gets. */
let next = "0";

let stub: Server;
let stubUrl: string;
let receiver: WebhookReceiver;
let gw: Awaited<ReturnType<typeof startTestGateway>>;

function detail(id: string, status: string): string {
  const raw = reports.get(id) ?? "0";
  if (raw.startsWith("!")) return raw.slice(1); // a whole body, as it is
  return `{"id":"${id}","status":"${status}","creditsUsed":${raw},"wsEndpoint":null,"liveUrl":null}`;
}

function startStub(): Promise<void> {
  stub = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      const url = req.url ?? "";
      const send = (body: string) => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(body);
      };
      const id = randomUUID();
      if (req.method === "POST" && url === "/api/session") {
        reports.set(id, next);
        return send(`{"id":"${id}","status":"active","wsEndpoint":null,"liveUrl":null}`);
      }
      if (req.method === "POST" && url === "/api/extract") {
        reports.set(id, next);
        return send(`{"jobId":"${id}"}`);
      }
      let m = /^\/api\/session\/([^/]+)\/stop$/.exec(url);
      if (m && req.method === "PUT") return send('{"success":true}');
      m = /^\/api\/session\/([^/?]+)$/.exec(url);
      if (m && req.method === "GET") return send(detail(m[1]!, "closed"));
      m = /^\/api\/extract\/([^/?]+)$/.exec(url);
      if (m && req.method === "GET") {
        const raw = reports.get(m[1]!) ?? "0";
        return send(raw.startsWith("!") ? raw.slice(1) : `{"jobId":"${m[1]}","status":"completed","creditsUsed":${raw},"data":{}}`);
      }
      res.writeHead(404, { "content-type": "application/json" });
      res.end('{"message":"not found","code":"not_found"}');
    });
  });
  return new Promise((r) =>
    stub.listen(0, "127.0.0.1", () => {
      stubUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}`;
      r();
    }),
  );
}

beforeAll(async () => {
  await startStub();
  receiver = await startWebhookReceiver();
  gw = await startTestGateway(
    {
      upstream: { baseUrl: stubUrl },
      cache: { enabled: false },
      alerts: { evaluateSeconds: 3600, allowHttp: true, allowCidrs: ["127.0.0.0/8"], webhooks: [receiver.url] },
      tenants: [{ id: "acme", scopes: ["sessions", "jobs"], keys: [{ hash: await hashTenantKey(key) }] }],
    },
    {
      upstreamApiKey: "up-key",
      tokenSecret: randomBytes(32).toString("hex"),
      webhookSecret: `whsec_${randomBytes(24).toString("base64")}`,
    },
  );
});
afterAll(async () => {
  await gw?.close();
  await receiver?.close();
  await new Promise<void>((r) => {
    stub?.closeAllConnections();
    stub ? stub.close(() => r()) : r();
  });
});

const call = (method: string, path: string, body?: unknown) =>
  fetch(`${gw.url}${path}`, {
    method,
    headers: { "x-api-key": key, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
const ledger = () => gw.gateway.services.stores.ledger;
const audit = async () =>
  (await gw.gateway.services.stores.audit.list({ limit: 1000 })).filter((a) => a.action === "alert.credits.report_refused");
const entryOf = async (resource: string): Promise<LedgerEntry> => {
  const [e, ...more] = await ledger().list({ tenant: "acme", resource });
  expect(more).toEqual([]);
  return e!;
};
/** The deliveries of the alert for entry `id` that the receiver accepted. */
const delivered = (id: string) => receiver.accepted().filter((d) => d.json?.data?.period === id);
async function eventually<T>(read: () => T | Promise<T>, ok: (v: T) => boolean, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  let v = await read();
  while (!ok(v) && Date.now() < end) {
    await sleep(50);
    v = await read();
  }
  return v;
}

// The session's hold: 30 minutes (the default timeout) × $0.0017 = 51000; its estimate when stopped at once: 1 minute,
// 1700. With maxReportMultiple 10 the most a report may come to is 510000 ($0.51, 510 credits at $0.001).
describe("a session whose details report a bad creditsUsed", () => {
  it.each([
    ["1e303", "1e303", "above_limit", "1e+303"],
    ["a negative figure", "-5", "negative", "-5"],
    ["a bare NaN", "NaN", "not_finite", '"NaN"'],
    ["a bare -Infinity", "-Infinity", "not_finite", '"-Infinity"'],
    ["NaN as a string", '"NaN"', "not_finite", '"NaN"'],
    ["a string", '"twelve"', "not_a_number", '"twelve"'],
    ["a numeric string", '"12.5"', "not_a_number", '"12.5"'],
    ["a finite figure far above the hold", "1000000", "above_limit", "1000000"],
    ["an answer that is not JSON", "!<html>oops</html>", "unreadable", "(not JSON)"],
  ])("%s: stop answers 200, the hold settles to the estimate, flagged and alerted once", async (_what, raw, reason, shown) => {
    next = raw;
    const created = await call("POST", "/api/session", {});
    expect(created.status).toBe(200);
    const { id } = (await created.json()) as { id: string };
    const stopped = await call("PUT", `/api/session/${id}/stop`);
    expect(stopped.status).toBe(200);
    expect(await stopped.json()).toEqual({ success: true });
    // A later read of its details: 200 with the figure as it came (a bare NaN as "NaN"); only details that are not
    // JSON at all cannot be presented (the gateway rewrites them) and answer 502 upstream_bad_response, as any such.
    const again = await call("GET", `/api/session/${id}`);
    if (reason === "unreadable") {
      expect(again.status).toBe(502);
      expect(await again.json()).toMatchObject({ code: "upstream_bad_response" });
    } else {
      expect(again.status).toBe(200);
      expect(await again.json()).toMatchObject({ id, status: "closed" });
    }

    const e = await entryOf(`session:${id}`);
    expect(e).toMatchObject({ state: "committed", settledFrom: "estimate", amount: "1700", refusedReport: reason });
    const alerts = await eventually(audit, (a) => a.some((x) => (x.after as { period: string }).period === e.id));
    const mine = alerts.filter((a) => (a.after as { period: string }).period === e.id);
    expect(mine).toHaveLength(1);
    expect(mine[0]!.after).toMatchObject({ route: "session.create", reason, field: "creditsUsed", reported: shown, settled: "0.0017" });
    const hooks = await eventually(
      () => delivered(e.id),
      (d) => d.length > 0,
    );
    expect(hooks).toHaveLength(1);
    expect(hooks[0]!.json).toMatchObject({ type: "credits.report_refused", data: { tenant: "acme", reason, resource: `session:${id}` } });
  });

  it("a figure within the multiple is booked as reported, above the estimate, and raises no refusal", async () => {
    next = "100"; // $0.10: above the 1-minute estimate, within 10 × the 30-minute hold
    const { id } = (await (await call("POST", "/api/session", {})).json()) as { id: string };
    expect((await call("PUT", `/api/session/${id}/stop`)).status).toBe(200);
    const e = await entryOf(`session:${id}`);
    expect(e).toMatchObject({ state: "committed", settledFrom: "upstream", amount: "100000" });
    expect(e.refusedReport).toBeUndefined();
    expect((await audit()).filter((a) => (a.after as { period: string }).period === e.id)).toEqual([]);
  });

  it("the reconciler's later reads of a refused figure leave the entry as it stands and alert no more", async () => {
    next = "-1";
    const { id } = (await (await call("POST", "/api/session", {})).json()) as { id: string };
    await call("PUT", `/api/session/${id}/stop`);
    const first = await entryOf(`session:${id}`);
    expect(first).toMatchObject({ amount: "1700", refusedReport: "negative" });
    reports.set(id, "1e303");
    await gw.gateway.reconciler.runOnce();
    await gw.gateway.reconciler.runOnce();
    const e = await entryOf(`session:${id}`);
    expect(e).toMatchObject({ state: "committed", settledFrom: "estimate", amount: "1700", refusedReport: "above_limit" });
    await sleep(300);
    expect((await audit()).filter((a) => (a.after as { period: string }).period === e.id)).toHaveLength(1);
    // Then a good figure lands: the entry is corrected to it.
    reports.set(id, "2.5");
    await gw.gateway.reconciler.runOnce();
    expect(await entryOf(`session:${id}`)).toMatchObject({ settledFrom: "upstream", amount: "2500" });
  });
});

// An extract of one URL holds 1 page × $0.01 = 10000; its ceiling is 100000 ($0.10, 100 credits).
describe("a job whose answer reports bad credits", () => {
  it.each([
    ["1e303", "1e303", "above_limit"],
    ["a negative figure", "-3", "negative"],
    ["a bare NaN", "NaN", "not_finite"],
    ["a string", '"lots"', "not_a_number"],
  ])("%s: the read answers 200, the hold settles to the estimate, flagged and alerted once", async (_what, raw, reason) => {
    next = raw;
    const before = new Set((await ledger().list({ tenant: "acme", kind: "credits" })).map((x) => x.id));
    const started = await call("POST", "/api/extract", { urls: ["https://example.com"] });
    expect(started.status).toBe(200);
    const { jobId } = (await started.json()) as { jobId: string };
    const read = await call("GET", `/api/extract/${jobId}`);
    expect(read.status).toBe(200);
    // Relayed as the upstream sent it (the bare NaN too).
    expect(await read.text()).toContain('"status":"completed"');
    const fresh = (await ledger().list({ tenant: "acme", kind: "credits" })).filter((x) => !before.has(x.id));
    expect(fresh).toHaveLength(1);
    const e = fresh[0];
    expect(e).toMatchObject({
      route: "extract.start",
      state: "committed",
      settledFrom: "estimate",
      amount: "10000",
      refusedReport: reason,
    });
    const alerts = await eventually(audit, (a) => a.some((x) => (x.after as { period: string }).period === e!.id));
    expect(alerts.filter((a) => (a.after as { period: string }).period === e!.id)).toHaveLength(1);
  });

  it("no hold is left open after all of the above", async () => {
    const open = (await ledger().list({ tenant: "acme" })).filter((e) => e.state === "reserved" || e.state === "uncertain");
    expect(open).toEqual([]);
  });
});
