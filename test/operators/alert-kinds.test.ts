// The alerts besides budgets, on two gateway instances sharing a real redis-server: each kind (upstream error rate,
// upstream latency, wallet floor, team-credit floor, state engine down, webhook delivery failing) reaches the receiver
// once fleet-wide. Then: a receiver down for a while gets its event after it comes back (the instance that first tried
// is gone by then), and loopback destinations are refused at config and at delivery (allowlisted only explicitly).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";
import { ConfigError, parseConfig } from "../../config/load.js";
import { startNodeGateway, type RunningGateway } from "../../src/host/node.js";
import { nodeWebhookSender } from "../../src/host/node/webhook-sender.js";
import { redisStores } from "../../src/state/redis.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { startRedisServer, type RedisServer } from "../state/redis-server.js";
import { startWebhookReceiver, type WebhookReceiver } from "./webhook-receiver.js";

const SECRET = `whsec_${randomBytes(24).toString("base64")}`;
/** Receivers on 127.0.0.1 are refused unless allowlisted: these tests allowlist loopback explicitly. */
const LOOPBACK = { allowHttp: true, allowCidrs: ["127.0.0.0/8", "::1"] };

/** A stand-in upstream: `mode` makes the gateway's forwarded calls fail (503) or slow (250 ms); the alert monitor's own reads (request id `alerts-…`) are always answered. */
async function startUpstream() {
  const state = { mode: "ok" as "ok" | "fail" | "slow", remaining: 5 };
  const server: Server = createServer((req, res) => {
    const own = String(req.headers["x-request-id"] ?? "").startsWith("alerts-");
    const answer = () =>
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ usage: 10, limit: 15, remaining: state.remaining }));
    if (own || state.mode === "ok") return answer();
    if (state.mode === "fail") return res.writeHead(503, { "content-type": "application/json" }).end("{}");
    setTimeout(answer, 250);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    state,
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, "127.0.0.1", r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

let redis: RedisServer;
let upstream: Awaited<ReturnType<typeof startUpstream>>;
beforeAll(async () => {
  [redis, upstream] = await Promise.all([startRedisServer(), startUpstream()]);
});
afterAll(async () => {
  await redis?.stop();
  await upstream?.close();
});

/** Two instances on one Redis prefix, with the given alert settings; `wallet` is the balance (USD) the wallet rule reads. */
async function fleet(alerts: Record<string, unknown>, wallet = { usd: 0.5 }) {
  const admin = generateTenantKey();
  const prefix = `tg-alerts-${randomBytes(4).toString("hex")}:`;
  const config = parseConfig({
    server: { host: "127.0.0.1", port: 0, logLevel: "silent" },
    upstream: { baseUrl: upstream.url, timeoutMs: 10_000 },
    payments: { enabled: false },
    state: { backend: "redis", redisUrl: redis.url },
    alerts: { evaluateSeconds: 3600, ...LOOPBACK, ...alerts },
    tenants: [{ id: "ops", scopes: ["admin"], keys: [{ hash: await hashTenantKey(admin) }] }],
  });
  const secrets = { upstreamApiKey: "up-key", tokenSecret: randomBytes(32).toString("hex"), webhookSecret: SECRET };
  const gws = await Promise.all(
    [0, 1].map(() =>
      startNodeGateway({
        config,
        secrets,
        deps: {
          stores: redisStores(redis.url, { prefix, connectTimeoutMs: 500, commandTimeoutMs: 500 }),
          // The wallet's balance is read on chain by readiness (tested there); here it is a figure the test sets.
          alertSources: { walletBalance: async () => BigInt(Math.round(wallet.usd * 1e6)) },
        },
      }),
    ),
  );
  const call = (gw: RunningGateway) =>
    fetch(`${gw.url}/api/team/credit-info`, { headers: { "x-api-key": admin } }).then((r) => r.arrayBuffer().then(() => r.status));
  /** Both instances evaluate at once, as their timers would. */
  const pass = () => Promise.all(gws.map((g) => g.gateway.alerts.runOnce()));
  /** Passes on both instances, as their timers would run them, until `ok` or `limitMs`. */
  const passUntil = async (limitMs: number, ok: () => boolean) => {
    for (const t0 = Date.now(); !ok() && Date.now() - t0 < limitMs; ) {
      await pass();
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  return { gws, admin, call, pass, passUntil, close: () => Promise.all(gws.map((g) => g.close())) };
}

const ofType = (r: WebhookReceiver, type: string) => r.accepted().filter((d) => d.json.type === type);

describe("alert kinds on two instances sharing a real redis-server", () => {
  it("fires each kind once fleet-wide, signed per Standard Webhooks", async () => {
    const receiver = await startWebhookReceiver();
    const slack = await startWebhookReceiver();
    const dead = `http://127.0.0.1:${await closedPort()}/hook`;
    const f = await fleet({
      webhooks: [receiver.url, dead],
      slack: [slack.url],
      initialBackoffMs: 100,
      maxAttempts: 3,
      rules: {
        upstreamErrors: { percent: 50, windowSeconds: 60, minCalls: 4 },
        upstreamLatency: { thresholdMs: 150, percent: 40, windowSeconds: 60, minCalls: 4 },
        walletBelow: "1.00",
        teamCreditsBelow: 100,
        stateDown: { afterSeconds: 1 },
        webhookFailing: { afterAttempts: 2 },
      },
    });
    try {
      // Upstream errors: 6 calls answered 503, half through each instance.
      upstream.state.mode = "fail";
      expect(await Promise.all(Array.from({ length: 6 }, (_, i) => f.call(f.gws[i % 2]!)))).toEqual(Array(6).fill(503));
      upstream.state.mode = "slow";
      expect(await Promise.all(Array.from({ length: 6 }, (_, i) => f.call(f.gws[i % 2]!)))).toEqual(Array(6).fill(200));
      upstream.state.mode = "ok";
      // Several passes on both instances: each condition still holds, yet each kind is raised once.
      for (let i = 0; i < 3; i++) await f.pass();
      const kinds = ["upstream.errors", "upstream.latency", "wallet.low", "team_credits.low", "webhook.failing"];
      await f.passUntil(30_000, () => kinds.every((k) => ofType(receiver, k).length > 0));
      await new Promise((r) => setTimeout(r, 1000)); // retries to the dead receiver run on; a duplicate would show now
      await f.pass();
      for (const k of kinds) expect(ofType(receiver, k), k).toHaveLength(1);
      expect(ofType(receiver, "upstream.errors")[0]!.json.data).toMatchObject({ windowSeconds: 60, calls: 12, failed: 6, percent: 50 });
      expect(ofType(receiver, "upstream.latency")[0]!.json.data).toMatchObject({ windowSeconds: 60, calls: 12 });
      expect(ofType(receiver, "upstream.latency")[0]!.json.data.slow).toBeGreaterThanOrEqual(6);
      expect(ofType(receiver, "wallet.low")[0]!.json.data).toMatchObject({ balance: "0.50", floor: "1.00" });
      expect(ofType(receiver, "team_credits.low")[0]!.json.data).toMatchObject({ remaining: 5, floor: 100 });
      expect(ofType(receiver, "webhook.failing")[0]!.json.data).toMatchObject({ receiver: new URL(dead).host });

      for (const d of receiver.deliveries) expect(new Webhook(SECRET).verify(d.body, d.headers)).toEqual(JSON.parse(d.body));
      // Each event reached the receiver once: no webhook-id twice.
      const ids = receiver.accepted().map((d) => d.id);
      expect(new Set(ids).size).toBe(ids.length);
      // The Slack-compatible receiver got the same events as `{text}` bodies, signed the same way.
      expect(
        slack
          .accepted()
          .map((d) => d.id)
          .sort(),
      ).toEqual([...ids].sort());
      const low = slack.accepted().find((d) => d.id.startsWith("wallet.low:"))!;
      expect(low.json).toEqual({ text: "Tollgate alert (wallet.low): the wallet holds $0.50, below the floor of $1.00" });
      expect(new Webhook(SECRET).verify(low.body, low.headers)).toEqual(low.json);

      // The state engine down for a while: raised once, when it answers again. (This Redis keeps nothing across the
      // restart, the other kinds' markers included: kinds whose condition still held would be raised again.)
      const port = redis.port;
      await redis.stop();
      await f.pass();
      await new Promise((r) => setTimeout(r, 1200));
      await f.pass();
      redis = await startRedisServer(port);
      // Passes go on while the clients reconnect; the first to find the state answering again raises it.
      await f.passUntil(30_000, () => ofType(receiver, "state.down").length > 0);
      await f.pass();
      await new Promise((r) => setTimeout(r, 500));
      expect(ofType(receiver, "state.down")).toHaveLength(1);
      expect(ofType(receiver, "state.down")[0]!.json.data.seconds).toBeGreaterThanOrEqual(1);
      expect(new Webhook(SECRET).verify(ofType(receiver, "state.down")[0]!.body, ofType(receiver, "state.down")[0]!.headers)).toBeTruthy();
    } finally {
      await f.close();
      await receiver.close();
      await slack.close();
    }
  }, 90_000);

  it("delivers to a receiver that was down once it is back, from another instance after the first one is gone", async () => {
    const port = await closedPort();
    const wallet = { usd: 0.5 };
    const f = await fleet(
      { webhooks: [`http://127.0.0.1:${port}/hook`], initialBackoffMs: 200, maxAttempts: 10, rules: { walletBelow: "1.00" } },
      wallet,
    );
    let receiver: WebhookReceiver | undefined;
    try {
      await f.gws[0]!.gateway.alerts.runOnce(); // raised on instance 0, whose first attempts find nobody listening
      await new Promise((r) => setTimeout(r, 600));
      await f.gws[0]!.close();
      const [waiting] = await f.gws[1]!.gateway.stores.outbox.list("pending", 10);
      expect(waiting).toMatchObject({ event: expect.stringMatching(/^wallet\.low:/) });
      expect(waiting!.attempts).toBeGreaterThanOrEqual(1);
      expect(waiting!.lastError).toMatch(/unreachable/);
      receiver = await startWebhookReceiver({ port });
      for (let i = 0; i < 20 && receiver.accepted().length === 0; i++) {
        await f.gws[1]!.gateway.alerts.runOnce();
        await new Promise((r) => setTimeout(r, 300));
      }
      expect(receiver.accepted().map((d) => d.json.type)).toEqual(["wallet.low"]);
      expect(await f.gws[1]!.gateway.stores.outbox.list("pending", 10)).toEqual([]);
      expect(receiver.accepted()[0]!.headers["webhook-id"]).toBe(waiting!.event);
    } finally {
      await f.close();
      await receiver?.close();
    }
  }, 60_000);
});

describe("alert destinations", () => {
  const base = { server: { port: 0 }, tenants: [] };
  const problems = (alerts: Record<string, unknown>, tenants: unknown[] = []) => {
    try {
      parseConfig({ ...base, alerts, tenants });
      return [];
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      return (err as ConfigError).problems;
    }
  };

  it("refuses loopback, link-local, private and metadata addresses, local names and other schemes at config, naming the field", async () => {
    const key = generateTenantKey();
    expect(problems({ allowHttp: true, webhooks: ["http://127.0.0.1:9000/hook"] })[0]).toMatch(
      /^alerts\.webhooks\[0\]: .*127\.0\.0\.1 is a loopback/,
    );
    for (const url of [
      "https://169.254.169.254/latest",
      "https://10.0.0.1/",
      "https://[::1]/",
      "https://[fd00:ec2::254]/",
      "https://192.168.1.2/",
    ])
      expect(problems({ webhooks: [url] }), url).toHaveLength(1);
    expect(problems({ webhooks: ["https://localhost/x"] })[0]).toMatch(/local host/);
    expect(problems({ webhooks: ["http://hooks.example.com/x"] })[0]).toMatch(/http is not allowed/);
    expect(problems({ webhooks: ["file:///etc/passwd"] })[0]).toMatch(/^alerts\.webhooks\[0\]: expected an https URL/);
    expect(problems({ slack: ["gopher://hooks.example.com/"] })[0]).toMatch(/^alerts\.slack\[0\]/);
    expect(
      problems({}, [{ id: "acme", keys: [{ hash: await hashTenantKey(key) }], alerts: { webhooks: ["https://10.1.2.3/h"] } }])[0],
    ).toMatch(/^tenants\[0\]\.alerts\.webhooks\[0\]: .*10\.1\.2\.3/);
    // Allowlisted explicitly: accepted.
    expect(problems({ allowHttp: true, allowCidrs: ["127.0.0.0/8"], webhooks: ["http://127.0.0.1:9000/hook"] })).toEqual([]);
    expect(problems({ webhooks: ["https://hooks.example.com/tollgate"] })).toEqual([]);
  });

  it("normalises the host before the check: trailing dots, every IPv6 form of an IPv4 address, private and link-local", () => {
    for (const url of [
      "https://localhost./x",
      "https://x.localhost./x",
      "https://LOCALHOST../x",
      "https://metadata.google.internal./x",
      "https://127.0.0.1./x",
      "https://0x7f.1/x",
      "https://2130706433/x",
      "https://[::7f00:1]/x",
      "https://[::127.0.0.1]/x",
      "https://[::ffff:0:7f00:1]/x",
      "https://[::ffff:0:127.0.0.1]/x",
      "https://[::ffff:127.0.0.1]/x",
      "https://[0:0:0:0:0:ffff:7f00:1]/x",
      "https://[::a9fe:a9fe]/latest", // 169.254.169.254
      "https://[::ffff:0:a00:1]/x", // 10.0.0.1
      "https://[::c0a8:102]/x", // 192.168.1.2
      "https://169.254.169.254./latest",
      "https://[fe80::1]/x",
      "https://[fc00::1]/x",
      "https://[::]/x",
      "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/x", // Teredo
      "https://[64:ff9b::7f00:1]/x",
    ])
      expect(problems({ webhooks: [url] }), url).toEqual([expect.stringMatching(/^alerts\.webhooks\[0\]: webhook .* refused: /)]);
    expect(problems({ webhooks: ["https://[::7f00:1]/x"] })[0]).toMatch(/127\.0\.0\.1 is a loopback/);
    expect(problems({ webhooks: ["https://[::ffff:0:a00:1]/x"] })[0]).toMatch(/10\.0\.0\.1 is a loopback, link-local, private/);
    // A public address in any of those forms, and a public name with its trailing dot, are accepted.
    for (const url of ["https://hooks.example.com./x", "https://[::ffff:0:808:808]/x", "https://[2606:4700::1111]/x"])
      expect(problems({ webhooks: [url] }), url).toEqual([]);
    // Allowlisting 127.0.0.0/8 covers its IPv6 spellings.
    expect(problems({ allowCidrs: ["127.0.0.0/8"], webhooks: ["https://[::7f00:1]/x"] })).toEqual([]);
  });

  it("refuses at delivery an IP literal in any of those forms, before connecting (the same normaliser)", async () => {
    const send = nodeWebhookSender({ allowHttp: true, allowCidrs: [] });
    for (const host of ["[::7f00:1]", "[::127.0.0.1]", "[::ffff:0:7f00:1]", "127.0.0.1.", "[::ffff:7f00:1]"])
      await expect(send({ url: `http://${host}:9/hook`, headers: new Headers(), body: "{}", timeoutMs: 2000 }), host).rejects.toThrow(
        /^refused: 127\.0\.0\.1 is a loopback/,
      );
  });

  it("refuses at delivery a name that resolves to loopback, and an outbox message to a loopback address, unless allowlisted", async () => {
    const receiver = await startWebhookReceiver();
    const port = new URL(receiver.url).port;
    try {
      const send = (policy: { allowHttp: boolean; allowCidrs: string[] }) =>
        nodeWebhookSender(policy)({
          url: `http://localhost:${port}/hook`,
          headers: new Headers({ "webhook-id": "x" }),
          body: "{}",
          timeoutMs: 5000,
        });
      await expect(send({ allowHttp: true, allowCidrs: [] })).rejects.toThrow(/^refused: localhost resolves to .*(127\.0\.0\.1|::1)/);
      expect(receiver.deliveries).toHaveLength(0);
      expect(await send({ allowHttp: true, allowCidrs: ["127.0.0.0/8", "::1"] })).toBe(200);
      expect(receiver.deliveries).toHaveLength(1);

      // A message already in the outbox (a receiver set through the admin API, say) to a loopback address is never sent.
      const f = await fleet({ allowCidrs: [] });
      try {
        const { outbox } = f.gws[0]!.gateway.stores;
        const now = Date.now();
        await outbox.enqueue({
          id: "loop|1",
          event: "evt_loop",
          destination: receiver.url,
          body: "{}",
          format: "standard",
          nextAt: now,
          createdAt: now,
        });
        await f.gws[0]!.gateway.alerts.runOnce();
        expect(receiver.deliveries).toHaveLength(1); // only the allowlisted send above
        const [dead] = await outbox.list("dead", 10);
        expect(dead).toMatchObject({ id: "loop|1", lastError: expect.stringMatching(/refused: .*127\.0\.0\.1 is a loopback/) });
        // Operators see it in the admin API, by host only.
        const r = await fetch(`${f.gws[1]!.url}/_tollgate/admin/webhooks?state=dead`, { headers: { "x-api-key": f.admin } });
        expect(r.status).toBe(200);
        const { messages } = await r.json();
        expect(messages).toEqual([
          expect.objectContaining({
            id: "loop|1",
            event: "evt_loop",
            receiver: new URL(receiver.url).host,
            attempts: 1,
            format: "standard",
          }),
        ]);
        expect(JSON.stringify(messages)).not.toContain("/hook");
      } finally {
        await f.close();
      }
    } finally {
      await receiver.close();
    }
  }, 30_000);

  it("refuses through the admin API a tenant receiver the rules refuse, naming the field (400)", async () => {
    const f = await fleet({ allowCidrs: [] });
    try {
      // A tenant the admin API owns (the config file's own tenants take their receivers from the file).
      const made = await fetch(`${f.gws[0]!.url}/_tollgate/admin/tenants`, {
        method: "POST",
        headers: { "x-api-key": f.admin, "content-type": "application/json" },
        body: JSON.stringify({ id: "rx" }),
      });
      expect(made.status).toBe(201);
      const put = (body: unknown) =>
        fetch(`${f.gws[0]!.url}/_tollgate/admin/tenants/rx/alerts`, {
          method: "PUT",
          headers: { "x-api-key": f.admin, "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      const r = await put({ webhooks: ["https://hooks.example.com/ok", "https://169.254.169.254/latest/meta-data"] });
      expect(r.status).toBe(400);
      const body = await r.json();
      expect(body).toMatchObject({ code: "invalid_body", fields: [{ field: "alerts.webhooks.1" }] });
      expect(body.message).toMatch(/169\.254\.169\.254 is a loopback, link-local/);
      expect((await put({ slack: ["http://127.0.0.1:1/x"] })).status).toBe(400);
      expect((await put({ webhooks: ["https://hooks.example.com/ok"] })).status).toBe(200);
    } finally {
      await f.close();
    }
  });

  it("does not follow a redirect", async () => {
    const target = await startWebhookReceiver();
    const redirector = createServer((_req, res) => res.writeHead(307, { location: target.url }).end());
    await new Promise<void>((r) => redirector.listen(0, "127.0.0.1", r));
    try {
      const url = `http://127.0.0.1:${(redirector.address() as AddressInfo).port}/hook`;
      const status = await nodeWebhookSender(LOOPBACK)({ url, headers: new Headers(), body: "{}", timeoutMs: 5000 });
      expect(status).toBe(307);
      expect(target.deliveries).toHaveLength(0);
    } finally {
      redirector.close();
      await target.close();
    }
  });
});
