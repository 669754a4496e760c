// Runs in Node before the Workers tests: starts the emulator (x402, sandboxes, sessions) and the local chain on 127.0.0.1 and
// hands their addresses, plus a funded wallet for the Worker, to the tests running inside workerd. Two stalling proxies
// in front of the emulator lose the answer to a paid request (after the upstream settled it, or before it arrived),
// so the Worker is left with an uncertain hold; they only drop traffic, they decide nothing. A webhook receiver that
// answers slowly takes budget alerts (a GET on it lists what it received). An OAuth client's metadata document (CIMD)
// is served from 127.0.0.1, naming its own URL as client_id.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestProject } from "vitest/node";
import { startEmulator } from "../../emulator/index.js";
import { startStallingProxy } from "../helpers/stalling-proxy.js";
import { startWebhookReceiver } from "../operators/webhook-receiver.js";
import { startAccessCerts } from "../helpers/access-certs.js";
import { exampleTenant } from "../helpers/example-tenant.js";
import { uptoBuyer } from "../sales/stack.js";

declare module "vitest" {
  export interface ProvidedContext {
    stack: {
      controlUrl: string;
      runtimeUrl: string;
      apiKey: string;
      rpcUrl: string;
      network: string;
      asset: string;
      payee: string;
      walletKey: string;
      wallet: string;
      /** A second funded wallet, for tests whose payments must not disturb another file's balance checks. */
      reconcileWalletKey: string;
      reconcileWallet: string;
      /** A third, for the alerts test (its payments stay out of the other files' balance checks). */
      alertsWalletKey: string;
      /** A fourth, for the MCP test (its balance check sees only its own payments). */
      mcpWalletKey: string;
      mcpWallet: string;
      /** For test/workers/sales.test.ts: a gateway wallet that sells (its own balance), a buyer, the facilitator, the token. */
      sales: {
        walletKey: string;
        wallet: string;
        buyerKey: string;
        buyer: string;
        facilitatorUrl: string;
        tokenName: string;
        tokenVersion: string;
        /** For test/workers/sales-time.test.ts: its own seller, and a buyer whose wallet approved Permit2 (x402 `upto`). */
        timeSellerKey: string;
        timeSeller: string;
        timeBuyerKey: string;
        timeBuyer: string;
        /** For test/workers/sales-v1.test.ts: its own seller and a buyer paying with x402 v1. */
        v1SellerKey: string;
        v1Seller: string;
        v1BuyerKey: string;
        v1Buyer: string;
      };
      /** Forwards a paid request (the upstream settles it on chain) and never answers. */
      settledButLostUrl: string;
      /** Swallows a paid request (nothing settles) and never answers. */
      neverArrivedUrl: string;
      /** Takes alert webhooks, holding each answer 500 ms; GET lists the deliveries (each with `answeredAt`). */
      webhookUrl: string;
      /** config/tollgate.example.toml's tenant, without id and keys, paying on the local chain (the round-trip test's). */
      exampleTenant: Record<string, unknown>;
      /** A Cloudflare Access team domain stand-in (its certs on 127.0.0.1) and the private JWK that signs its tokens. */
      accessTeamDomain: string;
      accessPrivateJwk: Record<string, unknown>;
      /** An OAuth client ID metadata document ("Doc Agent", redirect http://127.0.0.1:9/oauth/callback) on 127.0.0.1. */
      clientDocUrl: string;
      /** An OTLP/HTTP traces receiver (JSON): POST /v1/traces takes an export, GET lists every span received. */
      otlpUrl: string;
      /** A second emulator (sessions, sandboxes) running upstream accounts a, b and c, for test/workers/accounts.test.ts. */
      accounts: { controlUrl: string; runtimeUrl: string; apiKey: string; keys: Record<string, string> };
    };
  }
}

export default async function setup(project: TestProject) {
  const emu = await startEmulator({ modules: ["x402", "sandboxes", "sessions"] });
  const accountsEmu = await startEmulator({ modules: ["sandboxes", "sessions"], accounts: [{ id: "a" }, { id: "b" }, { id: "c" }] });
  const chain = emu.chain!;
  const wallet = await chain.createFundedWallet(10_000_000n);
  const reconcileWallet = await chain.createFundedWallet(10_000_000n);
  const alertsWallet = await chain.createFundedWallet(10_000_000n);
  const mcpWallet = await chain.createFundedWallet(10_000_000n);
  const [salesWallet, salesBuyer] = [await chain.createFundedWallet(10_000_000n), await chain.createFundedWallet(1_000_000n)];
  const [timeSeller, v1Seller, v1Buyer] = [
    await chain.createFundedWallet(10_000_000n),
    await chain.createFundedWallet(10_000_000n),
    await chain.createFundedWallet(1_000_000n),
  ];
  const timeBuyer = await uptoBuyer(emu, 1_000_000n);
  const [settledButLost, neverArrived, webhooks, access] = await Promise.all([
    startStallingProxy(emu.controlUrl, "forward-then-stall"),
    startStallingProxy(emu.controlUrl, "swallow"),
    startWebhookReceiver({ delayMs: 500 }),
    startAccessCerts(),
  ]);
  const docs = createServer((req, res) => {
    const self = `http://127.0.0.1:${(docs.address() as AddressInfo).port}${req.url}`;
    if (req.url !== "/client.json") return res.writeHead(404).end();
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({
        client_id: self,
        client_name: "Doc Agent",
        redirect_uris: ["http://127.0.0.1:9/oauth/callback"],
        token_endpoint_auth_method: "none",
      }),
    );
  });
  await new Promise<void>((resolve) => docs.listen(0, "127.0.0.1", resolve));
  const spans: unknown[] = [];
  const otlp = createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      if (req.method === "GET") return res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(spans));
      const doc = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: unknown[] }> }> };
      for (const rs of doc.resourceSpans) for (const ss of rs.scopeSpans) spans.push(...ss.spans);
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => otlp.listen(0, "127.0.0.1", resolve));
  project.provide("stack", {
    controlUrl: emu.controlUrl,
    runtimeUrl: emu.runtimeUrl,
    apiKey: emu.apiKey,
    rpcUrl: chain.rpcUrl,
    network: chain.network,
    asset: chain.token.address,
    payee: chain.payee,
    walletKey: wallet.privateKey,
    wallet: wallet.address,
    reconcileWalletKey: reconcileWallet.privateKey,
    reconcileWallet: reconcileWallet.address,
    alertsWalletKey: alertsWallet.privateKey,
    mcpWalletKey: mcpWallet.privateKey,
    mcpWallet: mcpWallet.address,
    sales: {
      walletKey: salesWallet.privateKey,
      wallet: salesWallet.address,
      buyerKey: salesBuyer.privateKey,
      buyer: salesBuyer.address,
      facilitatorUrl: emu.facilitator!.url,
      tokenName: chain.token.name,
      tokenVersion: chain.token.version,
      timeSellerKey: timeSeller.privateKey,
      timeSeller: timeSeller.address,
      timeBuyerKey: timeBuyer.privateKey,
      timeBuyer: timeBuyer.address,
      v1SellerKey: v1Seller.privateKey,
      v1Seller: v1Seller.address,
      v1BuyerKey: v1Buyer.privateKey,
      v1Buyer: v1Buyer.address,
    },
    settledButLostUrl: settledButLost.url,
    neverArrivedUrl: neverArrived.url,
    exampleTenant: exampleTenant([chain.network]),
    webhookUrl: webhooks.url,
    accessTeamDomain: access.teamDomain,
    accessPrivateJwk: access.privateJwk,
    clientDocUrl: `http://127.0.0.1:${(docs.address() as AddressInfo).port}/client.json`,
    otlpUrl: `http://127.0.0.1:${(otlp.address() as AddressInfo).port}/v1/traces`,
    accounts: {
      controlUrl: accountsEmu.controlUrl,
      runtimeUrl: accountsEmu.runtimeUrl,
      apiKey: accountsEmu.apiKey,
      keys: Object.fromEntries(["a", "b", "c"].map((id) => [id, accountsEmu.accounts.get(id)!.apiKey])),
    },
  });
  return async () => {
    docs.closeAllConnections();
    otlp.closeAllConnections();
    await Promise.all([
      settledButLost.close(),
      neverArrived.close(),
      webhooks.close(),
      access.close(),
      new Promise<void>((resolve) => docs.close(() => resolve())),
      new Promise<void>((resolve) => otlp.close(() => resolve())),
    ]);
    await Promise.all([emu.close(), accountsEmu.close()]);
  };
}
