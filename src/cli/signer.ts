// `tollgate signer`: the wallet's key away from the gateway. `keygen` makes the key pair inside a PKCS#11 token (it
// never leaves it) and prints its address; `serve` runs the out-of-process signer with its own limits on a Unix socket
// (src/host/node/signer-server.ts). PINs and keys come from the environment, never an argument.
import { parseArgs } from "node:util";
import { generatePkcs11Key, openPkcs11Signer } from "../host/node/pkcs11-signer.js";
import { startSignerServer, type SignerTls } from "../host/node/signer-server.js";
import { localWalletSigner, type SignerLimits, usdToAtomic, type WalletSigner } from "../payments/index.js";

const USAGE =
  "tollgate signer keygen --token LABEL [--label KEY_LABEL] [--module PATH]\n" +
  "tollgate signer serve (--socket PATH | --listen HOST:PORT --tls-cert F --tls-key F --tls-ca F) --state FILE --networks eip155:N,… --assets 0x…,… [--payees 0x…,…]\n" +
  "                      --max-per-authorization USD --max-per-day USD [--max-lifetime SECONDS]\n" +
  "                      [--pkcs11-token LABEL [--pkcs11-label KEY_LABEL] [--pkcs11-module PATH]]\n" +
  "  key: TOLLGATE_SIGNER_KEY (0x + 64 hex), or with --pkcs11-token the token's PIN in TOLLGATE_PKCS11_PIN";

const SOFTHSM = "/usr/lib/softhsm/libsofthsm2.so";

export async function cmdSigner(sub: string | undefined, args: string[]): Promise<void> {
  if (sub === "keygen") return keygen(args);
  if (sub === "serve") return serve(args);
  throw new Error(USAGE);
}

function keygen(args: string[]): void {
  const { values } = parseArgs({ args, options: { token: { type: "string" }, label: { type: "string" }, module: { type: "string" } } });
  if (!values.token) throw new Error("tollgate signer keygen: --token LABEL (the PKCS#11 token to make the key in) is required");
  const opts = { module: values.module ?? SOFTHSM, tokenLabel: values.token, keyLabel: values.label ?? "tollgate-wallet" };
  const address = generatePkcs11Key(opts, process.env.TOLLGATE_PKCS11_PIN);
  process.stdout.write(
    `New wallet key in token "${opts.tokenLabel}" (label "${opts.keyLabel}"; it cannot be read out of the token):\n\n` +
      `  address ${address}\n\nFund that address, then in your config:\n\n` +
      `  [wallet]\n  signer = "pkcs11"\n  [wallet.pkcs11]\n  module = "${opts.module}"\n  tokenLabel = "${opts.tokenLabel}"\n  keyLabel = "${opts.keyLabel}"\n\n` +
      "and start the gateway with TOLLGATE_PKCS11_PIN set and TOLLGATE_WALLET_KEY unset (or serve it: tollgate signer serve).\n",
  );
}

/** The limits from the flags, each problem naming its flag. */
function limitsOf(v: Record<string, string | undefined>): SignerLimits {
  const problems: string[] = [];
  const list = (name: string, re: RegExp, what: string, required: boolean) => {
    const items = (v[name] ?? "")
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean);
    if (required && !items.length) problems.push(`--${name}: required (${what})`);
    for (const i of items) if (!re.test(i)) problems.push(`--${name}: "${i}" is not ${what}`);
    return items;
  };
  const usd = (name: string) => {
    const s = v[name];
    if (!s || !/^\d{1,12}(\.\d{1,6})?$/.test(s)) {
      problems.push(`--${name}: expected a USD amount like "0.50"`);
      return 0n;
    }
    return usdToAtomic(s);
  };
  const networks = list("networks", /^eip155:\d+$/, 'a CAIP-2 EVM network like "eip155:8453"', true);
  const assets = list("assets", /^0x[0-9a-fA-F]{40}$/, "a 0x token address", true);
  const payees = list("payees", /^0x[0-9a-fA-F]{40}$/, "a 0x address", false);
  const limits: SignerLimits = {
    chainIds: networks.map((n) => Number(n.slice("eip155:".length))),
    assets: assets.map((a) => a.toLowerCase()),
    payees: payees.map((a) => a.toLowerCase()),
    maxPerAuthorization: usd("max-per-authorization"),
    maxPerDay: usd("max-per-day"),
    maxLifetimeSeconds: Number(v["max-lifetime"] ?? 600),
  };
  if (!Number.isInteger(limits.maxLifetimeSeconds) || limits.maxLifetimeSeconds < 10)
    problems.push("--max-lifetime: expected a whole number of seconds, at least 10");
  if (problems.length) throw new Error(`tollgate signer serve:\n${problems.map((p) => `  - ${p}`).join("\n")}`);
  return limits;
}

async function serve(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: Object.fromEntries(
      [
        "socket",
        "listen",
        "tls-cert",
        "tls-key",
        "tls-ca",
        "state",
        "networks",
        "assets",
        "payees",
        "max-per-authorization",
        "max-per-day",
        "max-lifetime",
        "pkcs11-token",
        "pkcs11-label",
        "pkcs11-module",
      ].map((k) => [k, { type: "string" as const }]),
    ),
  });
  const v = values as Record<string, string | undefined>;
  if (!v.socket === !v.listen)
    throw new Error(
      "tollgate signer serve: --socket PATH (a Unix socket) or --listen HOST:PORT with --tls-cert, --tls-key and --tls-ca (mutual TLS) is required",
    );
  let tls: SignerTls | undefined;
  if (v.listen) {
    const m = /^(.+):(\d{1,5})$/.exec(v.listen);
    if (!m) throw new Error("tollgate signer serve: --listen must be HOST:PORT");
    if (!v["tls-cert"] || !v["tls-key"] || !v["tls-ca"])
      throw new Error(
        "tollgate signer serve: --listen needs --tls-cert, --tls-key and --tls-ca (PEM files; clients need a certificate from that CA)",
      );
    tls = { host: m[1]!.replace(/^\[|\]$/g, ""), port: Number(m[2]), cert: v["tls-cert"], key: v["tls-key"], ca: v["tls-ca"] };
  }
  if (!v.state) throw new Error("tollgate signer serve: --state FILE (where the day's signed total is kept) is required");
  const limits = limitsOf(v);
  let wallet: WalletSigner;
  if (v["pkcs11-token"]) {
    wallet = openPkcs11Signer(
      { module: v["pkcs11-module"] ?? SOFTHSM, tokenLabel: v["pkcs11-token"], keyLabel: v["pkcs11-label"] ?? "tollgate-wallet" },
      process.env.TOLLGATE_PKCS11_PIN,
    );
  } else {
    const key = process.env.TOLLGATE_SIGNER_KEY?.trim();
    if (!key || !/^0x[0-9a-fA-F]{64}$/.test(key))
      throw new Error("TOLLGATE_SIGNER_KEY: expected 0x followed by 64 hex characters (or --pkcs11-token for a key in an HSM)");
    wallet = localWalletSigner(key as `0x${string}`);
  }
  const log = (fields: Record<string, unknown>) =>
    process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), ...fields })}\n`);
  const server = await startSignerServer({ socket: v.socket, tls, wallet, limits, stateFile: v.state, log });
  const on = tls ? `https://${v.listen} (mutual TLS)` : `unix:${v.socket}`;
  process.stderr.write(`tollgate signer listening on ${on} for ${wallet.address} (${wallet.kind})\n`);
  const stop = () => {
    server
      .close()
      .then(() => wallet.close?.())
      .finally(() => process.exit(0));
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}
