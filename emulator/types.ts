// Shared shapes every emulator module (sandboxes, sessions, x402) plugs into.
import type { Hono } from "hono";
import type { IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import type { CreditMeter } from "./credits.js";

export interface EmulatorLog {
  (event: string, fields?: Record<string, unknown>): void;
}

/** What the composed emulator gives each module. Origins are known only after listen(), hence functions. */
export interface EmulatorContext {
  /** The upstream API key accepted on the control plane (`x-api-key` or `Authorization: Bearer`). */
  apiKey: string;
  /** Control-plane origin, e.g. `http://127.0.0.1:41234` (no trailing slash). */
  controlOrigin(): string;
  /** Runtime-plane origin, e.g. `http://127.0.0.1:41235` (no trailing slash). */
  runtimeOrigin(): string;
  /**
   * Object-storage origin, e.g. `http://127.0.0.1:41236`: presigned upload URLs (image builds) point here, a host of its
   * own as a real service's storage bucket is, never the API's.
   */
  storageOrigin(): string;
  /** Secret used to sign emulator-issued tokens (runtime tokens, CDP tokens, presigned URLs). */
  tokenSecret: Uint8Array;
  /** Runtime token lifetime in seconds (tests set it down to a few seconds). */
  runtimeTokenTtlSeconds: number;
  /** Directory under which the emulator keeps its state (sandbox roots, browser profiles). Removed on close. */
  stateDir: string;
  log: EmulatorLog;
  /** What sandboxes reach as real ones reach the internet (sandboxes/outbound.ts): none listed, nothing. */
  internet?: { list(): Array<{ host: string; port: number }> };
  /** The accounts whose keys the control plane takes (./accounts.ts): the default one (`apiKey`) and any others. */
  accounts?: {
    byKey(key: string | undefined): unknown;
    readonly several: boolean;
    currentAccount(): string | undefined;
  };
  /** What the team is charged, by the emulator's schedule (./credits.ts); absent in tests of one module: nothing charged. */
  credits?: CreditMeter;
}

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer) => boolean;

/** One half of the emulator. Each module owns its routes; the composer mounts them in order. */
export interface EmulatorModule {
  name: string;
  /** Routes on the control listener (`/api/...`, `/x402/...`, computer actions). */
  control?: Hono<any>;
  /** Routes on the runtime listener (`/sandbox/<id>/...`, exposed ports by Host). */
  runtime?: Hono<any>;
  /** Routes on the storage listener (presigned object uploads: their URL carries its own credential). */
  storage?: Hono<any>;
  /** WebSocket upgrades on the control listener; return true when handled. */
  upgradeControl?: UpgradeHandler;
  /** WebSocket upgrades on the runtime listener; return true when handled. */
  upgradeRuntime?: UpgradeHandler;
  /** Stop everything the module started (processes, browsers), leaving nothing behind. */
  close(): Promise<void>;
}

/** Browser-session service, shared between `/api/session` and the paid `/x402/session`. */
export interface SessionService {
  /** Launches a real browser; params are CreateSessionParams (unknown keys ignored). */
  create(params: Record<string, unknown>, opts?: { owner?: string; unbilled?: boolean }): Promise<Record<string, unknown>>;
  get(id: string): Record<string, unknown> | undefined;
  stop(id: string): Promise<boolean>;
}

/** The local EVM chain with our EIP-3009 token, as started by emulator/chain. */
export interface ChainHandle {
  rpcUrl: string;
  chainId: number;
  /** CAIP-2 id, e.g. `eip155:31337`. */
  network: `eip155:${number}`;
  token: { address: `0x${string}`; name: string; version: string; decimals: number; symbol: string };
  /** Address that receives payments (the upstream's payTo). */
  payee: `0x${string}`;
  /** Private key of the facilitator account (pays gas for settlement). Generated at run time. */
  facilitatorKey: `0x${string}`;
  /** Creates a fresh funded wallet (ETH for gas is not needed by payers; token balance in atomic units). */
  createFundedWallet(tokenAmount: bigint): Promise<{ address: `0x${string}`; privateKey: `0x${string}` }>;
  balanceOf(address: `0x${string}`): Promise<bigint>;
  /** EIP-3009 authorizationState(authorizer, nonce). */
  authorizationState(authorizer: `0x${string}`, nonce: `0x${string}`): Promise<boolean>;
  /** Whether Permit2 has used `nonce` of `owner` (its unordered nonce bitmap): an `exact`/Permit2 or `upto` payment spent. */
  permit2NonceUsed(owner: `0x${string}`, nonce: bigint): Promise<boolean>;
  /** The token's ERC-20 allowance of `owner` to `spender` (Permit2 needs one from the payer: `tollgate wallet approve`). */
  allowance(owner: `0x${string}`, spender: `0x${string}`): Promise<bigint>;
  close(): Promise<void>;
}
