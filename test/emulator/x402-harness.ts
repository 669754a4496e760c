// Test harness for the x402 half: local chain + x402 module on a real 127.0.0.1 listener, and paying clients.
import { Hono } from "hono";
import { createServer, type Server } from "node:http";
import { getRequestListener } from "@hono/node-server";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import { x402Client, wrapFetchWithPayment } from "@x402/fetch";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { privateKeyToAccount } from "viem/accounts";
import { startChain, type LocalChainHandle } from "../../emulator/chain/index.js";
import { createX402Module, type X402Prices } from "../../emulator/x402/index.js";
import type { EmulatorContext, EmulatorModule, SessionService } from "../../emulator/types.js";

export interface X402Harness {
  origin: string;
  ctx: EmulatorContext;
  chain: LocalChainHandle;
  timings: { chainMs: number; moduleMs: number };
  events: Array<{ event: string; fields?: Record<string, unknown> }>;
  /** A fresh wallet holding `amount` atomic units, with a paying fetch built from @x402/fetch + @x402/evm. */
  payer(amount: bigint): Promise<Payer>;
  close(): Promise<void>;
}

export interface Payer {
  address: `0x${string}`;
  privateKey: `0x${string}`;
  client: x402Client;
  pay: typeof fetch;
  /** Every payment header the client sent, in order (so tests can replay one). */
  sent: Array<Record<string, string>>;
}

export async function startX402Harness(
  opts: {
    sessions?: (ctx: EmulatorContext) => Promise<{ service: SessionService; module?: EmulatorModule }>;
    prices?: Partial<X402Prices>;
  } = {},
): Promise<X402Harness> {
  const events: X402Harness["events"] = [];
  const stateDir = await mkdtemp(join(tmpdir(), "tollgate-x402-test-"));
  let origin = "";
  const ctx: EmulatorContext = {
    apiKey: `emu_${randomBytes(12).toString("hex")}`,
    controlOrigin: () => origin,
    storageOrigin: () => origin,
    runtimeOrigin: () => origin,
    tokenSecret: randomBytes(32),
    runtimeTokenTtlSeconds: 300,
    stateDir,
    log: (event, fields) => events.push({ event, fields }),
  };
  const t0 = performance.now();
  const chain = await startChain({ log: ctx.log });
  const chainMs = performance.now() - t0;
  const sessions = opts.sessions ? await opts.sessions(ctx) : { service: unusedSessions };
  const t1 = performance.now();
  const mod = await createX402Module(ctx, { chain, sessions: sessions.service, prices: opts.prices });
  const moduleMs = performance.now() - t1;
  const app = new Hono();
  if (sessions.module?.control) app.route("/", sessions.module.control);
  app.route("/", mod.control!);
  app.notFound((c) => c.json({ message: "Not found", code: "not_found" }, 404));
  const server: Server = createServer(getRequestListener(app.fetch));
  if (sessions.module?.upgradeControl) {
    const up = sessions.module.upgradeControl;
    server.on("upgrade", (req, socket, head) => {
      if (!up(req, socket, head)) socket.destroy();
    });
  }
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;

  return {
    origin,
    ctx,
    chain,
    events,
    timings: { chainMs, moduleMs },
    async payer(amount) {
      const wallet = await chain.createFundedWallet(amount);
      const client = new x402Client().setSpendControls({
        // v1 requirements name the network ("base-sepolia"), v2 ones use CAIP-2: allow the local token under both.
        allowedAssets: ([chain.network, "base-sepolia"] as const).map((network) => ({
          network: network as `${string}:${string}`,
          asset: chain.token.address,
          maxAmountPerPayment: "1000000",
        })),
      });
      registerExactEvmScheme(client, { signer: privateKeyToAccount(wallet.privateKey) });
      const sent: Payer["sent"] = [];
      const recording: typeof fetch = async (input, init) => {
        const req = new Request(input as RequestInfo, init);
        const h: Record<string, string> = {};
        for (const name of ["payment-signature", "x-payment"]) {
          const v = req.headers.get(name);
          if (v) h[name] = v;
        }
        if (Object.keys(h).length) sent.push(h);
        return fetch(req);
      };
      return { ...wallet, client, pay: wrapFetchWithPayment(recording, client) as typeof fetch, sent };
    },
    async close() {
      server.closeAllConnections?.();
      await new Promise((r) => server.close(() => r(null)));
      await sessions.module?.close();
      await mod.close();
      await chain.close();
      await rm(stateDir, { recursive: true, force: true });
    },
  };
}

const unusedSessions: SessionService = {
  async create() {
    throw new Error("no session service in this harness");
  },
  get: () => undefined,
  stop: async () => false,
};

export const json = (body: unknown): RequestInit => ({
  method: "POST",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});
