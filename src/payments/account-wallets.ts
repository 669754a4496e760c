// Which wallet pays an x402 call (docs/accounts.md#wallets): with [[upstream.accounts]] entries that name a wallet
// (walletKeyEnv / walletKeyFile), a tenant pinned to such an account pays from that account's wallet; every other
// tenant (unpinned, or pinned only to accounts without one) pays from the gateway's wallet, exactly as without
// accounts. Only the choice of signer lives here: each signer is still the one holder of its key (./signer.ts).
import type { PaymentSigner } from "./signer.js";

/** The signer paying a call, and the account whose wallet it is (undefined: the gateway's own wallet). */
export interface PayingWallet {
  signer: PaymentSigner | undefined;
  account?: string;
}

export class AccountWallets {
  constructor(
    /** The gateway's wallet ([wallet], TOLLGATE_WALLET_KEY): pays for every tenant no account wallet is chosen for. */
    readonly gateway: PaymentSigner | undefined,
    /** The accounts' own wallets, by account id, in config order. */
    private readonly byAccount: ReadonlyMap<string, PaymentSigner>,
  ) {}

  /** Some account has a wallet of its own. */
  get any(): boolean {
    return this.byAccount.size > 0;
  }

  /**
   * The wallet paying a tenant's x402 calls: that of the first account in the tenant's `accounts` (its pin, in its
   * order) that has one; else the gateway's. An unpinned tenant may be placed on any account, so no account's wallet
   * is more its own than another's: it pays from the gateway's wallet.
   */
  forTenant(tenant: { accounts?: string[] }): PayingWallet {
    for (const id of tenant.accounts ?? []) {
      const signer = this.byAccount.get(id);
      if (signer) return { signer, account: id };
    }
    return { signer: this.gateway };
  }

  /** The address of an account's own wallet; undefined: the account has none (the gateway's pays). */
  addressOf(account: string): `0x${string}` | undefined {
    return this.byAccount.get(account)?.address;
  }

  /** Every account wallet's address (never its key), for readiness. */
  addresses(): Array<{ account: string; address: `0x${string}` }> {
    return [...this.byAccount].map(([account, s]) => ({ account, address: s.address }));
  }
}
