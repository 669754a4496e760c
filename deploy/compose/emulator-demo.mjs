// compose.yaml's demo upstream: starts the emulator (search and x402 with its local chain; no sandboxes) on the compose
// network, funds a payer wallet on that chain, and writes what the gateways need into the shared /run/demo volume:
// tollgate.toml (the mounted template /demo/tollgate.toml plus the upstream, the chain's token and a demo tenant),
// secrets.env (the emulator's API key, the payer's key, a token secret: worthless outside this demo) and acme.key.
import { randomBytes } from "node:crypto";
import { readFileSync, renameSync, writeFileSync } from "node:fs";
import { startEmulator } from "/src/emulator/dist/index.js";
import { generateTenantKey, hashTenantKey } from "/src/dist/src/identity/tenants.js";
import { parse, stringify } from "/src/node_modules/smol-toml/dist/index.js";

const out = process.env.DEMO_DIR ?? "/run/demo";
const emu = await startEmulator({
  host: "0.0.0.0",
  controlPort: 9000,
  runtimePort: 9001,
  modules: ["sessions", "x402"],
  log: (event, fields) =>
    process.stdout.write(`${JSON.stringify({ ts: new Date().toISOString(), source: "emulator", event, ...fields })}\n`),
});
const chain = emu.chain;
const wallet = await chain.createFundedWallet(100_000_000n);
const key = generateTenantKey();
const config = parse(readFileSync("/demo/tollgate.toml", "utf8"));
config.upstream = { baseUrl: "http://emulator:9000", allowedHosts: ["emulator:9001"] };
// The gateways reach the chain through the facilitator the emulator runs; no RPC of their own, so no balance check.
config.payments = { networks: [chain.network], assets: [chain.token.address], maxPerRequest: "0.50", minWalletBalance: "0" };
config.tenants = [{ id: "acme", scopes: ["search"], keys: [{ hash: await hashTenantKey(key), label: "demo" }], budget: { daily: "5.00" } }];
const write = (name, text, mode) => {
  writeFileSync(`${out}/.${name}`, text, { mode });
  renameSync(`${out}/.${name}`, `${out}/${name}`);
};
write("tollgate.toml", stringify(config), 0o644);
write(
  "secrets.env",
  `TOLLGATE_UPSTREAM_API_KEY=${emu.apiKey}\nTOLLGATE_WALLET_KEY=${wallet.privateKey}\nTOLLGATE_TOKEN_SECRET=${randomBytes(32).toString("base64url")}\n`,
  0o644,
);
write("acme.key", `${key}\n`, 0o644);
process.stdout.write(`${JSON.stringify({ event: "demo.ready", tenant: "acme", keyFile: `${out}/acme.key` })}\n`);
// The demo tenant's key on a line of its own (not inside the JSON above), so `podman-compose logs emulator` shows it
// plainly and `grep '^demo key'` finds it. A demo key for the demo upstream: worthless outside this stack.
process.stdout.write(`\ndemo key (tenant acme, $5.00/day, scope search): ${key}\n\n`);
const stop = () => emu.close().then(() => process.exit(0));
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
