// The out-of-process signer's own limits (`tollgate signer serve`, docs/signers.md): what it will sign whatever the
// gateway asks. It signs only EIP-3009 authorizations (TransferWithAuthorization: what `exact` pays with) and Permit2
// witness transfers to x402's two proxies (exact over Permit2, and upto, whose amount is the most it may move), reads
// the payment out of the typed data itself, and refuses one on a network, asset or payee it does not allow, above its
// most per authorization, living longer than it allows, or past its most per UTC day. Anything else is refused: a new
// kind of signature needs a new rule here first.
import type { TypedData } from "./wallet-signer.js";

export interface SignerLimits {
  /** Chain ids it signs for (from CAIP-2 `eip155:<id>`). */
  chainIds: readonly number[];
  /** Token contracts (the EIP-712 domain's verifyingContract), lower case. */
  assets: readonly string[];
  /** Payees (`to`), lower case; empty: any. */
  payees: readonly string[];
  /** Most per authorization, atomic units. */
  maxPerAuthorization: bigint;
  /** Most signed per UTC day, atomic units (counted when signed: an authorization may be used until it lapses). */
  maxPerDay: bigint;
  /** Longest an authorization may live (validBefore − now), seconds. */
  maxLifetimeSeconds: number;
}

/** The payment an EIP-3009 authorization makes. */
export interface Authorization {
  chainId: number;
  asset: string;
  from: string;
  to: string;
  value: bigint;
  validBefore: number;
}

const EIP3009_FIELDS = ["from:address", "to:address", "value:uint256", "validAfter:uint256", "validBefore:uint256", "nonce:bytes32"];

const isAddress = (v: unknown): v is string => typeof v === "string" && /^0x[0-9a-fA-F]{40}$/.test(v);
const toBigInt = (v: unknown): bigint | undefined => {
  try {
    return typeof v === "bigint" ? v : typeof v === "number" || (typeof v === "string" && /^\d+$/.test(v)) ? BigInt(v) : undefined;
  } catch {
    return undefined;
  }
};

/** Permit2, and the two x402 proxies a Permit2 witness transfer may name as spender (each pays only `witness.to`). */
const PERMIT2 = "0x000000000022d473030f116ddee9f6b43ac78ba3";
const X402_PROXIES = ["0x402085c248eea27d92e8b30b2c58ed07f9e20001", "0x4020a4f3b7b90cca423b9fabcc0ce57c6c240002"];
const PERMIT2_FIELDS = ["permitted:TokenPermissions", "spender:address", "nonce:uint256", "deadline:uint256", "witness:Witness"];
const TOKEN_PERMISSIONS_FIELDS = ["token:address", "amount:uint256"];
const WITNESS_FIELDS = [
  ["to:address", "validAfter:uint256"],
  ["to:address", "facilitator:address", "validAfter:uint256"],
];

const fieldsOf = (data: TypedData, type: string) =>
  (data.types[type] as Array<{ name: string; type: string }> | undefined)?.map((f) => `${f.name}:${f.type}`).join();

/**
 * A Permit2 witness transfer (x402 exact over Permit2, or upto): Permit2's domain, x402's types exactly, a spender
 * that is one of x402's proxies (which pay only the witness's payee), from this signer's wallet (Permit2 takes the
 * signer as the owner).
 */
function readPermit2(data: TypedData, address: string): Authorization | { refused: string } {
  if (
    fieldsOf(data, "PermitWitnessTransferFrom") !== PERMIT2_FIELDS.join() ||
    fieldsOf(data, "TokenPermissions") !== TOKEN_PERMISSIONS_FIELDS.join() ||
    !WITNESS_FIELDS.some((w) => fieldsOf(data, "Witness") === w.join())
  )
    return { refused: "the PermitWitnessTransferFrom types are not x402's" };
  const { name, chainId, verifyingContract } = data.domain as { name?: unknown; chainId?: unknown; verifyingContract?: unknown };
  if (name !== "Permit2" || !isAddress(verifyingContract) || verifyingContract.toLowerCase() !== PERMIT2)
    return { refused: "the witness transfer is not for Permit2" };
  const m = data.message as {
    permitted?: Record<string, unknown>;
    spender?: unknown;
    deadline?: unknown;
    witness?: Record<string, unknown>;
  };
  if (!isAddress(m.spender) || !X402_PROXIES.includes(m.spender.toLowerCase()))
    return { refused: "the witness transfer's spender is not one of x402's Permit2 proxies" };
  const id = toBigInt(chainId);
  const value = toBigInt(m.permitted?.amount);
  const validBefore = toBigInt(m.deadline);
  if (id === undefined || !isAddress(m.permitted?.token) || !isAddress(m.witness?.to) || value === undefined || validBefore === undefined)
    return { refused: "the authorization is malformed" };
  return {
    chainId: Number(id),
    asset: m.permitted.token.toLowerCase(),
    from: address.toLowerCase(),
    to: m.witness.to.toLowerCase(),
    value,
    validBefore: Number(validBefore),
  };
}

/** The authorization `data` makes for the wallet `address`, or why it is not one this signer reads. */
export function readAuthorization(data: TypedData, address = ""): Authorization | { refused: string } {
  if (data.primaryType === "PermitWitnessTransferFrom" && address) return readPermit2(data, address);
  if (data.primaryType !== "TransferWithAuthorization")
    return {
      refused: `only EIP-3009 TransferWithAuthorization and Permit2 witness transfers are signed, not ${String(data.primaryType).slice(0, 60)}`,
    };
  const fields = (data.types.TransferWithAuthorization as Array<{ name: string; type: string }> | undefined)?.map(
    (f) => `${f.name}:${f.type}`,
  );
  if (!fields || fields.join() !== EIP3009_FIELDS.join()) return { refused: "the TransferWithAuthorization type is not EIP-3009's" };
  const { chainId, verifyingContract } = data.domain as { chainId?: unknown; verifyingContract?: unknown };
  const m = data.message as Record<string, unknown>;
  const id = toBigInt(chainId);
  const value = toBigInt(m.value);
  const validBefore = toBigInt(m.validBefore);
  if (
    id === undefined ||
    !isAddress(verifyingContract) ||
    !isAddress(m.from) ||
    !isAddress(m.to) ||
    value === undefined ||
    validBefore === undefined
  )
    return { refused: "the authorization is malformed" };
  return {
    chainId: Number(id),
    asset: verifyingContract.toLowerCase(),
    from: m.from.toLowerCase(),
    to: m.to.toLowerCase(),
    value,
    validBefore: Number(validBefore),
  };
}

/**
 * Why `a` may not be signed by the wallet `address` under `limits`, with `spentToday` already signed this UTC day at
 * `nowSeconds`; undefined when it may.
 */
export function limitRefusal(
  a: Authorization,
  address: string,
  limits: SignerLimits,
  spentToday: bigint,
  nowSeconds: number,
): string | undefined {
  if (a.from !== address.toLowerCase()) return "the authorization is not from this signer's wallet";
  if (!limits.chainIds.includes(a.chainId)) return `network eip155:${a.chainId} is not allowed`;
  if (!limits.assets.includes(a.asset)) return `asset ${a.asset} is not allowed`;
  if (limits.payees.length && !limits.payees.includes(a.to)) return `payee ${a.to} is not allowed`;
  if (a.value > limits.maxPerAuthorization) return `${a.value} is above the most per authorization (${limits.maxPerAuthorization})`;
  if (a.validBefore - nowSeconds > limits.maxLifetimeSeconds)
    return `the authorization lives ${a.validBefore - nowSeconds} s, above the most (${limits.maxLifetimeSeconds} s)`;
  if (spentToday + a.value > limits.maxPerDay)
    return `${a.value} would bring today's signed total to ${spentToday + a.value}, above the most per day (${limits.maxPerDay})`;
  return undefined;
}
