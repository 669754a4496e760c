// Settles held payments from the chain's truth once their authorization has expired: used → committed, unused → released.
import { createPublicClient, http, type PublicClient } from "viem";
import type { GatewayServices } from "../services.js";
import type { LedgerEntry } from "../state/types.js";

const AUTHORIZATION_STATE_ABI = [
  {
    type: "function",
    name: "authorizationState",
    stateMutability: "view",
    inputs: [
      { name: "authorizer", type: "address" },
      { name: "nonce", type: "bytes32" },
    ],
    outputs: [{ type: "bool" }],
  },
] as const;

/** Grace after validBefore before the chain is asked (a settlement mined at the last second must be visible). */
const GRACE_SECONDS = 5;
/** An entry reserved but never signed is stale after this long (the process that held it died before signing). */
const UNSIGNED_STALE_MS = 10 * 60 * 1000;

export interface ReconcileReport {
  committed: number;
  released: number;
  stillHeld: number;
}

export class PaymentReconciler {
  private readonly clients = new Map<string, PublicClient>();

  constructor(private readonly services: GatewayServices) {}

  private client(network: string): PublicClient | undefined {
    const url = this.services.config.payments.rpc[network];
    if (!url) return undefined;
    let c = this.clients.get(network);
    if (!c) {
      c = createPublicClient({ transport: http(url, { retryCount: 1, timeout: 10_000 }) }) as PublicClient;
      this.clients.set(network, c);
    }
    return c;
  }

  /** Entries whose outcome can now be decided. */
  private async due(now: number): Promise<LedgerEntry[]> {
    const ledger = this.services.stores.ledger as any;
    if (typeof ledger.expiredHolds === "function") return ledger.expiredHolds(now, 500);
    const held = [
      ...(await this.services.stores.ledger.list({ state: "uncertain", limit: 1000 })),
      ...(await this.services.stores.ledger.list({ state: "reserved", limit: 1000 })),
    ];
    return held.filter((e) => (e.validBefore ? (e.validBefore + GRACE_SECONDS) * 1000 <= now : e.createdAt + UNSIGNED_STALE_MS <= now));
  }

  async runOnce(): Promise<ReconcileReport> {
    const { stores, logger } = this.services;
    const now = this.services.now();
    const report: ReconcileReport = { committed: 0, released: 0, stillHeld: 0 };
    for (const e of await this.due(now)) {
      if (e.validBefore && (e.validBefore + GRACE_SECONDS) * 1000 > now) continue;
      if (!e.nonce || !e.payer) {
        await stores.ledger.release(e.id, "never signed (reservation abandoned)", now);
        report.released++;
        continue;
      }
      const client = this.client(e.network);
      if (!client) {
        report.stillHeld++;
        logger.error("cannot reconcile a held payment: no RPC for its network", { entry: e.id, network: e.network });
        continue;
      }
      try {
        const used = await client.readContract({
          address: e.asset as `0x${string}`,
          abi: AUTHORIZATION_STATE_ABI,
          functionName: "authorizationState",
          args: [e.payer as `0x${string}`, e.nonce as `0x${string}`],
        });
        if (used) {
          await stores.ledger.commit(e.id, e.transaction, now);
          report.committed++;
        } else {
          await stores.ledger.release(e.id, "authorization expired unused (checked on chain)", now);
          report.released++;
        }
        logger.info("payment reconciled", { entry: e.id, tenant: e.tenant, outcome: used ? "committed" : "released" });
      } catch (err) {
        report.stillHeld++;
        logger.error("reconciliation failed; will retry", { entry: e.id, error: String(err) });
      }
    }
    return report;
  }

  /** Runs periodically until the gateway closes (Node). */
  start(intervalMs: number): () => void {
    let running = false;
    const timer = setInterval(() => {
      if (running) return;
      running = true;
      this.runOnce()
        .catch((err) => this.services.logger.error("reconciler error", { error: String(err) }))
        .finally(() => (running = false));
    }, intervalMs);
    (timer as any).unref?.();
    return () => clearInterval(timer);
  }
}
