// Secrets reach only the modules that use them: GatewayServices (handed to every route module) holds none of its own;
// the upstream API key sits in Upstream, and the wallet key, metrics token and webhook secret are nowhere in it.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { parseConfig, type Secrets } from "../../config/load.js";
import { createGateway } from "../../src/gateway.js";
import { memoryStores } from "../../src/state/memory.js";

const ROOT = join(import.meta.dirname, "../..");

const SECRETS = {
  upstreamApiKey: "upstream-key-0123456789abcdef",
  walletKey: `0x${"ab".repeat(32)}`,
  tokenSecret: "token-secret-0123456789abcdef0123456789",
  metricsToken: "metrics-token-0123456789abcdef",
  webhookSecret: "webhook-secret-0123456789abcdef",
} satisfies Secrets;

/** Every path from `root` (enumerable properties, Map and Set entries) at which a string contains `needle`. */
function pathsHolding(root: unknown, needle: string): string[] {
  const found: string[] = [];
  const seen = new WeakSet<object>();
  const walk = (v: unknown, path: string, depth: number) => {
    if (typeof v === "string") {
      if (v.includes(needle)) found.push(path);
      return;
    }
    if (!v || typeof v !== "object" || depth > 12 || seen.has(v)) return;
    seen.add(v);
    if (v instanceof Map) for (const [k, x] of v) walk(x, `${path}.get(${String(k)})`, depth + 1);
    else if (v instanceof Set) for (const x of v) walk(x, `${path}[set]`, depth + 1);
    else for (const [k, x] of Object.entries(v)) walk(x, path ? `${path}.${k}` : k, depth + 1);
  };
  walk(root, "", 0);
  return found;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return /\.tsx?$/.test(name) && !/\.test\.tsx?$/.test(name) ? [relative(ROOT, p)] : [];
  });
}

const mentioning = (re: RegExp) =>
  ["src", "middleware", "config"].flatMap((d) => sourceFiles(join(ROOT, d))).filter((f) => re.test(readFileSync(join(ROOT, f), "utf8")));

describe("secrets reach only the modules that use them", () => {
  const config = parseConfig({ server: { logLevel: "error" }, tenants: [{ id: "acme", keys: [{ hash: `sha256:${"a".repeat(64)}` }] }] });
  const gateway = createGateway(config, { secrets: SECRETS, stores: memoryStores(Date.now), logSink: () => {} });

  it("GatewayServices has no `secrets`", () => {
    expect(Object.keys(gateway.services)).not.toContain("secrets");
    expect(JSON.stringify(Object.keys(gateway.services))).not.toMatch(/secret/i);
  });

  it("no service holds the wallet key, the metrics token or the webhook secret", () => {
    for (const name of ["walletKey", "metricsToken", "webhookSecret"] as const)
      expect(pathsHolding(gateway.services, SECRETS[name]), name).toEqual([]);
  });

  it("the upstream API key is held by Upstream alone, the token secret by nothing enumerable", () => {
    const paths = pathsHolding(gateway.services, SECRETS.upstreamApiKey);
    expect(paths.length).toBeGreaterThan(0);
    for (const p of paths) expect(p).toMatch(/^upstream\./);
    expect(pathsHolding(gateway.services, SECRETS.tokenSecret)).toEqual([]);
  });

  it("only the entries and createGateway read a secret off the loaded Secrets", () => {
    expect(mentioning(/\bsecrets\.(walletKey|metricsToken|webhookSecret|upstreamApiKey|tokenSecrets?)\b/).sort()).toEqual([
      "src/cli/index.ts",
      "src/gateway-deps.ts",
      "src/gateway.ts",
    ]);
  });

  it("walletKey is named only where it is loaded (config, the dev stack, an account's wallet) and handed to a signer", () => {
    // config/secrets-schema.ts names the file field (walletKeyFile), read by config/load.ts like the variable; an
    // upstream account's own wallet (walletKeyEnv / walletKeyFile) is declared in config/accounts-schema.ts, loaded into
    // its signer by src/payments/account-wallets.ts and read by `tollgate wallet --account` (src/cli/wallet.ts). The
    // files are read by config/load-node.ts (Node only); `config render --worker` names the secret to put
    // (src/cli/worker-config.ts, never its value); createGateway's deps builder hands it to the signer (gateway-deps.ts).
    expect(mentioning(/walletKey/).sort()).toEqual([
      "config/accounts-schema.ts",
      "config/load-node.ts",
      "config/load.ts",
      "config/secrets-schema.ts",
      "src/cli/dev-stack.ts",
      "src/cli/index.ts",
      "src/cli/wallet.ts",
      "src/cli/worker-config.ts",
      "src/gateway-deps.ts",
      "src/gateway.ts",
      "src/payments/account-wallets.ts",
    ]);
  });
});
