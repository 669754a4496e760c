// Secrets from files (docs/secrets.md): the upstream key, the token secret and the others given as file paths, read at
// start and again when the file changes, without a restart. Rotating the upstream key file while requests run: no
// request fails. A replaced token secret keeps verifying its tokens over the grace period, then stops. A bad file is
// named by its field and changes nothing; no secret reaches a log line or an answer.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { ConfigError, parseConfig, refuseSecretFiles, secretFileRefs } from "../../config/load.js";
import { generateTenantKey, hashTenantKey } from "../../src/identity/tenants.js";
import { TokenService } from "../../src/identity/tokens.js";
import { memoryStores } from "../../src/state/memory.js";
import { startNodeGateway } from "../../src/host/node.js";
import { readSecretFiles } from "../../src/host/node/reload.js";

/** An upstream that takes only the API keys in `accepted` (as the real one does while a key is being rotated). */
async function keyedUpstream() {
  const accepted = new Set<string>();
  const seen = new Map<string, number>();
  const server = createServer((req, res) => {
    const key = String(req.headers["x-api-key"] ?? "");
    seen.set(key, (seen.get(key) ?? 0) + 1);
    const ok = accepted.has(key);
    // A little work upstream, so requests are under way while the file changes.
    setTimeout(() => {
      res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
      res.end(JSON.stringify(ok ? { usage: 1 } : { message: "Invalid API key", code: "unauthorized" }));
    }, 15);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    accepted,
    seen,
    close: () => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))),
  };
}

/** Replaces a file the way Kubernetes updates a mounted secret: a new file renamed over the old one. */
async function swap(path: string, content: string) {
  await writeFile(`${path}.new`, content, { mode: 0o600 });
  await rename(`${path}.new`, path);
}

const until = async (what: string, check: () => boolean | Promise<boolean>, ms = 10_000) => {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
};

describe("secrets from files", () => {
  let dir: string;
  let upstream: Awaited<ReturnType<typeof keyedUpstream>>;
  let gw: Awaited<ReturnType<typeof startNodeGateway>>;
  const logs: string[] = [];
  const ops = generateTenantKey();
  const keys = { one: `up_${randomBytes(16).toString("hex")}`, two: `up_${randomBytes(16).toString("hex")}` };
  const tokenSecrets = { one: randomBytes(32).toString("base64url"), two: randomBytes(32).toString("base64url") };
  const files = { upstream: "", token: "", webhook: "", metrics: "" };
  const metricsTokens = { one: `m_${randomBytes(16).toString("hex")}`, two: `m_${randomBytes(16).toString("hex")}` };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "tg-secrets-"));
    upstream = await keyedUpstream();
    upstream.accepted.add(keys.one);
    files.upstream = join(dir, "upstream-api-key");
    files.token = join(dir, "token-secret");
    files.webhook = join(dir, "webhook-secret");
    await writeFile(files.upstream, `${keys.one}\n`);
    await writeFile(files.token, tokenSecrets.one);
    await writeFile(files.webhook, "whsec_" + randomBytes(24).toString("base64"));
    files.metrics = join(dir, "metrics-token");
    await writeFile(files.metrics, metricsTokens.one);
    const config = parseConfig({
      server: { host: "127.0.0.1", port: 0, logLevel: "debug" },
      upstream: { baseUrl: upstream.url },
      secrets: {
        upstreamApiKeyFile: files.upstream,
        tokenSecretFile: files.token,
        webhookSecretFile: files.webhook,
        metricsTokenFile: files.metrics,
        checkSeconds: 0.1,
      },
      tenants: [{ id: "ops", scopes: ["admin", "search"], keys: [{ hash: await hashTenantKey(ops) }] }],
    });
    const secrets = await readSecretFiles(secretFileRefs(config, {}));
    gw = await startNodeGateway({ config, secrets, env: {}, logSink: (l) => logs.push(l) });
  });
  afterAll(async () => {
    await gw?.close();
    await upstream?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const creditInfo = () => fetch(`${gw.url}/api/team/credit-info`, { headers: { "x-api-key": ops } });

  it("rotating the upstream key file while requests run: no request fails, no restart", async () => {
    const statuses = new Map<number, number>();
    let stop = false;
    let sent = 0;
    const worker = async () => {
      while (!stop) {
        const res = await creditInfo();
        await res.arrayBuffer();
        sent++;
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    await until("traffic", () => sent > 40);
    // The operator's rotation: the upstream takes both keys, the file gets the new one, the old key is revoked once
    // the gateway uses the new one.
    upstream.accepted.add(keys.two);
    await swap(files.upstream, `${keys.two}\n`);
    await until("the new key in use", () => (upstream.seen.get(keys.two) ?? 0) > 20);
    const oldCalls = upstream.seen.get(keys.one) ?? 0;
    await new Promise((r) => setTimeout(r, 100));
    upstream.accepted.delete(keys.one);
    const before = sent;
    await until("traffic on the new key alone", () => sent > before + 80);
    stop = true;
    await Promise.all(workers);
    expect([...statuses.keys()]).toEqual([200]);
    expect(oldCalls).toBeGreaterThan(0);
    expect(upstream.seen.get(keys.one)).toBeLessThanOrEqual(oldCalls + 8); // at most the calls already on their way
    console.log(
      `upstream key rotated under load: ${sent} requests, all 200; ${oldCalls} on the old key, ${upstream.seen.get(keys.two)} on the new`,
    );
    const joined = logs.join("\n");
    expect(joined).toContain("secrets re-read from their files");
    expect(joined).not.toContain(keys.one);
    expect(joined).not.toContain(keys.two);
  }, 60_000);

  it("a replaced token secret still verifies its tokens (grace); new tokens are signed with the new one", async () => {
    const mint = async () => {
      const res = await fetch(`${gw.url}/_tollgate/tokens`, {
        method: "POST",
        headers: { "x-api-key": ops, "content-type": "application/json" },
        body: JSON.stringify({ kind: "mcp", scopes: ["search"], cap: "1.00", ttlSeconds: 600 }),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { token: string }).token;
    };
    const usage = (token: string) => fetch(`${gw.url}/_tollgate/usage`, { headers: { authorization: `Bearer ${token}` } });
    const old = await mint();
    expect((await usage(old)).status).toBe(200);
    const kidOf = (t: string) => JSON.parse(Buffer.from(t.split(".")[0]!, "base64url").toString()).kid as string;
    await swap(files.token, tokenSecrets.two);
    await until("the new token secret", async () => kidOf(await mint()) !== kidOf(old));
    const fresh = await mint();
    expect((await usage(fresh)).status).toBe(200);
    expect((await usage(old)).status).toBe(200);
    expect(logs.join("\n")).not.toContain(tokenSecrets.two);
  }, 30_000);

  it("the metrics bearer and the webhook secret are taken anew from their files", async () => {
    const metrics = (token: string) => fetch(`${gw.url}/_tollgate/metrics`, { headers: { authorization: `Bearer ${token}` } });
    expect((await metrics(metricsTokens.one)).status).toBe(200);
    const mark = logs.length;
    await swap(files.metrics, metricsTokens.two);
    await swap(files.webhook, "whsec_" + randomBytes(24).toString("base64"));
    await until("the new bearer", async () => (await metrics(metricsTokens.two)).status === 200);
    expect((await metrics(metricsTokens.one)).status).toBe(401);
    await until("the webhook secret", () => logs.slice(mark).some((l) => l.includes("webhookSecret")));
    expect(logs.join("\n")).not.toContain(metricsTokens.two);
  }, 30_000);

  it("a file that becomes empty or unreadable is named by its field and changes nothing", async () => {
    const mark = logs.length;
    await swap(files.upstream, "\n");
    await until("the complaint", () => logs.slice(mark).some((l) => l.includes("secrets.upstreamApiKeyFile")));
    expect((await creditInfo()).status).toBe(200); // still the last good key
    await rm(files.upstream);
    await until("the missing file", () => logs.slice(mark).some((l) => l.includes("ENOENT")));
    expect((await creditInfo()).status).toBe(200);
    await swap(files.upstream, keys.two);
    expect(logs.slice(mark).join("\n")).not.toContain(keys.two);
  }, 30_000);
});

describe("secret file rules", () => {
  it("TokenService.replaceSecrets: the old secret verifies for the grace, then not; grace 0 stops it at once", async () => {
    let now = 1_000_000;
    const kv = memoryStores(() => now).kv;
    const svc = new TokenService([{ kid: "a", secret: "a".repeat(40) }], kv, () => now);
    const mint = () => svc.mint({ tenant: "acme", kind: "search", scopes: ["search"], ttlSeconds: 3600 });
    const first = (await mint()).token;
    svc.replaceSecrets([{ kid: "b", secret: "b".repeat(40) }], 60_000);
    expect((await svc.verify(first)).tenant).toBe("acme");
    now += 61_000;
    await expect(svc.verify(first)).rejects.toMatchObject({ code: "token_invalid" });
    const second = (await mint()).token;
    svc.replaceSecrets([{ kid: "c", secret: "c".repeat(40) }], 0);
    await expect(svc.verify(second)).rejects.toMatchObject({ code: "token_invalid" });
    expect((await svc.verify((await mint()).token)).tenant).toBe("acme");
  });

  it("a secret given twice, or a file on Workers, is a config error naming the fields", () => {
    const config = parseConfig({ secrets: { upstreamApiKeyFile: "/run/secrets/k" } });
    expect(() => secretFileRefs(config, { TOLLGATE_UPSTREAM_API_KEY: "x" })).toThrow(
      /secrets\.upstreamApiKeyFile: TOLLGATE_UPSTREAM_API_KEY is set too/,
    );
    expect(() => secretFileRefs(config, { TOLLGATE_UPSTREAM_API_KEY_FILE: "/a" })).toThrow(/also given as TOLLGATE_UPSTREAM_API_KEY_FILE/);
    expect(secretFileRefs(parseConfig({}), { TOLLGATE_TOKEN_SECRET_FILE: "/t" })).toEqual([
      { secret: "tokenSecret", path: "/t", field: "TOLLGATE_TOKEN_SECRET_FILE" },
    ]);
    expect(() => refuseSecretFiles(config)).toThrow(
      /secrets\.upstreamApiKeyFile: files cannot be read on Workers; .*wrangler secret put TOLLGATE_UPSTREAM_API_KEY/,
    );
    expect(() => parseConfig({ secrets: { tokenFile: "/x" } })).toThrow(ConfigError);
  });

  it("reads a token secret file as one secret or a kid:secret list, checked like its variable", async () => {
    const dir = await mkdtemp(join(tmpdir(), "tg-secret-rules-"));
    try {
      const f = join(dir, "t");
      const read = async (content: string) => {
        await writeFile(f, content);
        return readSecretFiles([{ secret: "tokenSecret", path: f, field: "secrets.tokenSecretFile" }]);
      };
      expect((await read("s".repeat(40))).tokenSecrets).toEqual([
        { kid: expect.stringMatching(/^f-[0-9a-f]{12}$/), secret: "s".repeat(40) },
      ]);
      expect((await read(`new:${"n".repeat(32)},old:${"o".repeat(32)}`)).tokenSecrets!.map((t) => t.kid)).toEqual(["new", "old"]);
      await expect(read("short")).rejects.toThrow(/secrets\.tokenSecretFile: expected a secret of at least 32 characters/);
      await expect(read("short")).rejects.not.toThrow(/short/);
      await expect(readSecretFiles([{ secret: "walletKey", path: join(dir, "none"), field: "TOLLGATE_WALLET_KEY_FILE" }])).rejects.toThrow(
        /TOLLGATE_WALLET_KEY_FILE: cannot read .*: ENOENT/,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
