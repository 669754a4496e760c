// Runs in Node before the Workers tests: starts the emulator (x402 + sandboxes) and the local chain on 127.0.0.1 and
// hands their addresses, plus a funded wallet for the Worker, to the tests running inside workerd.
import type { TestProject } from "vitest/node";
import { startEmulator } from "../../emulator/index.js";

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
    };
  }
}

export default async function setup(project: TestProject) {
  const emu = await startEmulator({ modules: ["x402", "sandboxes"] });
  const chain = emu.chain!;
  const wallet = await chain.createFundedWallet(10_000_000n);
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
  });
  return async () => {
    await emu.close();
  };
}
