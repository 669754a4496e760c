// The money side's one door: the rest of the code (src/ outside payments/, middleware/, config/) imports from
// payments/ only through this module (.dependency-cruiser.cjs, rule "payments-through-its-door"). Inside, each kind of
// spend has one entry that runs it whole and comes back once:
//   - the x402 payer (./payer.ts, payX402): choose the option, reserve, sign, send, settle or release;
//   - the credit meter (./credit-meter.ts, billCredits): reserve, bill or keep the hold, settle to the upstream's report.
// Both run through ./money-call.ts (runMoney): the fleet's claim a caller hands in, the early part started beside it,
// the figures the answer shows. The rest is what the other rooms read or start: the holds kept until a resource ends,
// the budget figures, the money events port, the signers, the reconciler, the usage export, the money's formats, and
// what a gateway remembers of its money (services.payments, ./memory.ts).

// The two entries, and what they answer (once per call: the paid answer and its figures, or the fleet's answer);
// an answer that never reached them (a cache hit, a joined call, a replay) gets its savings and figures from
// servedUnpaid, the paid search's one entry for it.
export { payX402 } from "./payer.js";
export { billCredits, type Charge, type MeterServices } from "./credit-meter.js";
export { type Paid, servedUnpaid, type Shown } from "./money-call.js";

// What a gateway remembers of its money, built once by createGateway
export { paymentsMemory, type PaymentsMemory } from "./memory.js";
export { tenantAmounts } from "./amounts.js";

// Holds kept until what they pay for ends (a job, a sandbox, a session)
export { settleJobFrom, settleResource, TERMINAL } from "./kept-holds.js";

// Budgets: limits and what is left, per window; a keyless token's cap
export { limitsOf } from "./budgets/limits.js";
export { remainingOf, spendCeiling, tenantWindows, type WindowFigures } from "./budgets/remaining.js";
export { capLedgerTenant } from "./spend.js";

// The money events port (operators listen), savings among them (announced by servedUnpaid)
export type { MoneyEvent, MoneyEvents } from "./events.js";

// Wallets and signers
export { AccountWallets } from "./account-wallets.js";
export { PaymentSigner } from "./signer.js";
export { localWalletSigner, type TypedData, type WalletSigner } from "./wallet-signer.js";
export { limitRefusal, readAuthorization, type SignerLimits } from "./signer-limits.js";
export { PERMIT2_ADDRESS } from "./schemes/permit2.js";

// The books: the reconciler, the usage export and calibration, the credit drift, the cost settled so far
export { PaymentReconciler } from "./reconcile.js";
export { type Calibration, calibrate, usageCsv, usageExport, windowOf } from "./usage-export.js";
export { lastCreditDrift } from "./credit-drift.js";
export { settledCostSoFar } from "./credit-reports.js";

// Money's formats: USD strings at the edges, atomic units (bigint) inside
export { atomicToUsd, usdToAtomic } from "./money.js";
