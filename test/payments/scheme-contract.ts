// The contract every PaymentScheme (src/payments/schemes/) keeps. A new scheme is one folder plus one call of this suite
// with its own fixture: a wallet, an option of its scheme as an upstream would send it, and how to read its header.
import { describe, expect, it } from "vitest";
import type { LedgerEntry } from "../../src/state/types.js";
import { paymentOptions, type PaymentOption } from "../../src/payments/requirements.js";
import type { PaymentScheme, WalletKey } from "../../src/payments/schemes/types.js";
import { localWalletSigner } from "../../src/payments/wallet-signer.js";
import type { PaymentRequired } from "../../src/payments/wire.js";

export interface SchemeFixture {
  wallet: WalletKey;
  /** The address (or account id) the wallet pays from. */
  payer: string;
  /** A PaymentRequired whose first option is this scheme's. */
  paymentRequired: PaymentRequired;
  /** The header the upstream expects for this x402 version. */
  headerName: string;
  /** Decodes the header value: the scheme and network it was signed for, and the option it echoes back if it does. */
  signedFor(headerValue: string): { scheme: string; network: string; accepted?: unknown };
}

const entryOf = (option: PaymentOption, signed: { nonce: string; validBefore: number; payer: string }): LedgerEntry => ({
  id: "e1",
  kind: "x402",
  tenant: "t",
  route: "r",
  fingerprint: "f",
  amount: option.amount.toString(),
  asset: option.asset,
  network: option.network,
  payee: option.payTo,
  state: "uncertain",
  day: "2026-01-01",
  month: "2026-01",
  createdAt: 0,
  updatedAt: 0,
  ...signed,
});

export function paymentSchemeContract(name: string, scheme: PaymentScheme, fixture: () => SchemeFixture): void {
  describe(`payment scheme ${name}`, () => {
    const optionOf = (f: SchemeFixture) => paymentOptions(f.paymentRequired)[0]!;

    it("accepts its own options and none of another scheme", () => {
      const option = optionOf(fixture());
      expect(option.scheme).toBe(scheme.scheme);
      expect(scheme.accepts(option)).toBe(true);
      expect(scheme.accepts({ ...option, scheme: `${scheme.scheme}-other` })).toBe(false);
    });

    it("signs exactly the option sent: the header echoes it as the upstream wrote it", async () => {
      const f = fixture();
      const option = optionOf(f);
      const signed = await scheme.sign(localWalletSigner(f.wallet), f.paymentRequired, option, 300);
      expect(signed.header[0]).toBe(f.headerName);
      const decoded = f.signedFor(signed.header[1]);
      expect({ scheme: decoded.scheme, network: decoded.network }).toEqual({ scheme: option.raw.scheme, network: option.raw.network });
      if (decoded.accepted !== undefined) expect(decoded.accepted).toEqual(option.raw);
    });

    it("gives the ledger a fresh authorization id per signature, who pays, and when it lapses (capped by policy)", async () => {
      const f = fixture();
      const option = optionOf(f);
      const now = Math.floor(Date.now() / 1000);
      const a = await scheme.sign(localWalletSigner(f.wallet), f.paymentRequired, option, 30);
      const b = await scheme.sign(localWalletSigner(f.wallet), f.paymentRequired, option, 30);
      expect(a.nonce).not.toBe(b.nonce);
      expect(a.payer.toLowerCase()).toBe(f.payer.toLowerCase());
      expect(a.validBefore).toBeGreaterThan(now);
      expect(a.validBefore).toBeLessThanOrEqual(now + 30 + 5);
    });

    it("signs the authorization chosen before it (held with the reservation): exactly that nonce, end and payer", async () => {
      const f = fixture();
      const option = optionOf(f);
      const wallet = localWalletSigner(f.wallet);
      const nowMs = Date.now();
      const chosen = scheme.authorization(option, wallet.address, 30, nowMs);
      const again = scheme.authorization(option, wallet.address, 30, nowMs);
      expect(chosen.nonce).not.toBe(again.nonce);
      expect(chosen.payer.toLowerCase()).toBe(f.payer.toLowerCase());
      expect(chosen.validBefore).toBe(Math.floor(nowMs / 1000) + Math.max(10, Math.min(option.maxTimeoutSeconds, 30)));
      const signed = await scheme.sign(wallet, f.paymentRequired, option, 30, chosen);
      expect({ nonce: signed.nonce, validBefore: signed.validBefore, payer: signed.payer.toLowerCase() }).toEqual({
        ...chosen,
        payer: chosen.payer.toLowerCase(),
      });
      // The header carries it too (what the seller verifies): the nonce appears in the encoded payload.
      const decoded = Buffer.from(signed.header[1], "base64").toString("utf8");
      expect(decoded).toContain(chosen.nonce);
      expect(decoded).toContain(String(chosen.validBefore));
      expect(scheme.owns(entryOf(option, chosen))).toBe(true);
    });

    it("owns the ledger entries it signs, not a credits entry", async () => {
      const f = fixture();
      const option = optionOf(f);
      const signed = await scheme.sign(localWalletSigner(f.wallet), f.paymentRequired, option, 60);
      const entry = entryOf(option, signed);
      expect(scheme.owns(entry)).toBe(true);
      expect(scheme.owns({ ...entry, kind: "credits", network: undefined, asset: undefined })).toBe(false);
    });

    it("keeps an entry held when no RPC is configured for its network", async () => {
      const f = fixture();
      const option = optionOf(f);
      const signed = await scheme.sign(localWalletSigner(f.wallet), f.paymentRequired, option, 60);
      expect(await scheme.verdict(entryOf(option, signed), {})).toBe("no-rpc");
    });
  });
}
