// The gateway's own upstream credential, watched (issue 54): an upstream 401 (or a 403 that says the key is at fault) on
// a call made with the gateway's API key is not the tenant's problem. The tenant gets 502 upstream_credentials_rejected
// (never the upstream's 401 "Invalid API key", one character from the gateway's answer to a bad tenant key); the
// rejection is counted (tollgate_upstream_credentials_rejected_total and the 0/1 gauge), the operators are alerted
// (src/operators/alerts/alert-monitor.ts sets `onRejected`) and /_tollgate/ready turns degraded
// (src/operators/actions/readiness.ts). The next accepted call, or a rotated key, clears it.
import { GatewayError } from "../errors.js";
import type { GatewayMetrics } from "../telemetry/gateway-metrics.js";

/** A 403 body that blames the credential (the upstream's 403s also mean "not allowed", e.g. deleting a public image). */
const BLAMES_THE_KEY = /api[ _-]?key|unauthori[sz]ed|credential|invalid[ _-]?(key|token)/i;

export interface Rejection {
  account: string;
  status: number;
  /** Epoch ms of the first rejection since the key was last accepted. */
  since: number;
}

export class CredentialWatch {
  private readonly rejected = new Map<string, Rejection>();
  /** Bumped when a key is rotated: readiness drops its cached probe so the new key is tried at once. */
  generation = 0;
  /** Told of each rejection (the alert). */
  onRejected?: (r: Rejection) => void;
  /** Told when an account's key is accepted again after a rejection (the alert re-armed). */
  onCleared?: (account: string) => void;

  constructor(
    private readonly metrics: GatewayMetrics | undefined,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * The answer to a call made with `account`'s key: a rejection is consumed and thrown as a 502; anything else passes,
   * and clears a rejection recorded for that account.
   */
  async check(res: Response, account: string): Promise<Response> {
    if (!(await this.isRejection(res))) {
      if (res.status < 400) this.accept(account);
      return res;
    }
    await res.body?.cancel().catch(() => {});
    this.reject(account, res.status);
    throw new GatewayError(
      502,
      "upstream_credentials_rejected",
      "The upstream service refused the gateway's own credentials (your key is fine); the gateway's operators are alerted. Try again later.",
    );
  }

  /** Whether an answer to a call with the gateway's key rejects that key (a 403 is read to see whether it blames it). */
  async isRejection(res: Response): Promise<boolean> {
    if (res.status === 401) return true;
    if (res.status !== 403) return false;
    return BLAMES_THE_KEY.test(
      (
        await res
          .clone()
          .text()
          .catch(() => "")
      ).slice(0, 2048),
    );
  }

  /** Records a rejection of `account`'s key (a call's, or readiness's probe). */
  reject(account: string, status: number): void {
    const first = this.rejected.get(account);
    const r = { account, status, since: first?.since ?? this.now() };
    this.rejected.set(account, r);
    this.metrics?.upstreamCredentials(account, true);
    this.onRejected?.(r);
  }

  /** The key was accepted (readiness's probe answered 2xx). */
  accept(account: string): void {
    if (!this.rejected.delete(account)) return;
    this.metrics?.upstreamCredentials(account, false);
    this.onCleared?.(account);
  }

  /** A key was rotated: it is tried afresh. */
  rotated(): void {
    this.generation++;
  }

  /** The accounts whose key is rejected now. */
  current(): Rejection[] {
    return [...this.rejected.values()];
  }
}
