// The payment schemes the gateway can pay with. A new scheme is one folder beside exact-evm/ and one line here.
import type { LedgerEntry } from "../../state/types.js";
import type { PaymentOption } from "../requirements.js";
import { exactEvm } from "./exact-evm/index.js";
import { uptoEvm } from "./upto-evm/index.js";
import type { PaymentScheme } from "./types.js";

// An entry is owned by the first that claims it: upto's (Permit2 nonces) before exact's (every EVM x402 entry).
const SCHEMES: readonly PaymentScheme[] = [uptoEvm, exactEvm];

/** The scheme that pays this option, if any. */
export const schemeFor = (option: PaymentOption): PaymentScheme | undefined => SCHEMES.find((s) => s.accepts(option));

/** The scheme whose authorization a ledger entry records, if any. */
export const schemeOfEntry = (entry: LedgerEntry): PaymentScheme | undefined => SCHEMES.find((s) => s.owns(entry));
