// The wallet signer whose key never leaves an HSM token (PKCS#11: SoftHSM, YubiHSM, CloudHSM, Luna… one code path).
// The key is a secp256k1 pair generated inside the token (CKM_EC_KEY_PAIR_GEN, sensitive, not extractable); the token
// signs the EIP-712 hash with CKM_ECDSA and answers r ‖ s; this side normalises s to the lower half of the curve order
// (Ethereum refuses high s) and finds the recovery id by recovering the address both ways. The address comes from the
// public point (CKA_EC_POINT). Node only: picked by the Node entry for `[wallet] signer = "pkcs11"`.
import { createRequire } from "node:module";
import { hashTypedData, recoverAddress, serializeSignature, type TypedDataDefinition } from "viem";
import { publicKeyToAddress } from "viem/accounts";
import type { TypedData, WalletSigner } from "../../payments/index.js";

type Pkcs11Module = typeof import("pkcs11js");
type Handle = Buffer;

/** secp256k1's OID as DER (1.3.132.0.10): the EC_PARAMS of the key pair. */
const SECP256K1_PARAMS = Buffer.from("06052b8104000a", "hex");
/** The order of secp256k1's group, and half of it: a signature's s above the half is replaced by n − s. */
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const HALF_N = N >> 1n;

export interface Pkcs11Options {
  /** The PKCS#11 module (shared library), e.g. /usr/lib/softhsm/libsofthsm2.so. */
  module: string;
  /** The token's label. */
  tokenLabel: string;
  /** The key pair's CKA_LABEL. */
  keyLabel: string;
}

/** pkcs11js is an optional dependency (a native addon): loaded only when a PKCS#11 signer is configured. */
function loadPkcs11js(): Pkcs11Module {
  try {
    return createRequire(import.meta.url)("pkcs11js") as Pkcs11Module;
  } catch (err) {
    throw new Error(
      `wallet.signer "pkcs11" needs the pkcs11js module (an optional dependency built at npm install; is a compiler there?): ${(err as Error).message}`,
    );
  }
}

type Library = InstanceType<Pkcs11Module["PKCS11"]>;

/**
 * A module is initialised once per process (a second C_Initialize is refused): each user takes a reference, and the
 * last one to let go finalises it.
 */
const loaded = new Map<string, { lib: Library; users: number }>();

function acquire(p: Pkcs11Module, module: string): { lib: Library; release: () => void } {
  let entry = loaded.get(module);
  if (!entry) {
    const lib = new p.PKCS11();
    lib.load(module);
    lib.C_Initialize();
    loaded.set(module, (entry = { lib, users: 0 }));
  }
  entry.users++;
  const held = entry;
  let released = false;
  return {
    lib: held.lib,
    release() {
      if (released) return;
      released = true;
      if (--held.users > 0) return;
      loaded.delete(module);
      try {
        held.lib.C_Finalize();
      } finally {
        held.lib.close();
      }
    },
  };
}

/** An open, logged-in session on the token labelled `tokenLabel`. */
function openSession(p: Pkcs11Module, opts: Pkcs11Options, pin: string) {
  const { lib, release } = acquire(p, opts.module);
  try {
    const slot = lib.C_GetSlotList(true).find((s) => lib.C_GetTokenInfo(s).label.trim() === opts.tokenLabel);
    if (!slot) throw new Error(`wallet.pkcs11.tokenLabel: no token labelled "${opts.tokenLabel}" in ${opts.module}`);
    const session = lib.C_OpenSession(slot, p.CKF_SERIAL_SESSION | p.CKF_RW_SESSION);
    try {
      lib.C_Login(session, p.CKU_USER, pin);
    } catch (err) {
      // A login is the application's, on every session of that token: another signer of this process holds it.
      if (/CKR_USER_ALREADY_LOGGED_IN/.test((err as Error).message)) return { lib, session, close: closer(lib, session) };
      lib.C_CloseSession(session);
      throw new Error(`TOLLGATE_PKCS11_PIN: the token refused the login (${(err as Error).message.split(":")[0]})`);
    }
    return { lib, session, close: closer(lib, session) };
  } catch (err) {
    release();
    throw err;
  }

  function closer(lib: Library, session: Handle) {
    return () => {
      try {
        // A logout ends the login of every session of the application on that token: only the last one logs out.
        if ((loaded.get(opts.module)?.users ?? 0) <= 1) lib.C_Logout(session);
        lib.C_CloseSession(session);
      } finally {
        release();
      }
    };
  }
}

function findKey(p: Pkcs11Module, lib: Library, session: Handle, cls: number, label: string): Handle | undefined {
  lib.C_FindObjectsInit(session, [
    { type: p.CKA_CLASS, value: cls },
    { type: p.CKA_KEY_TYPE, value: p.CKK_EC },
    { type: p.CKA_LABEL, value: label },
  ]);
  try {
    return lib.C_FindObjects(session) ?? undefined;
  } finally {
    lib.C_FindObjectsFinal(session);
  }
}

/** The address of a public point as the token gives it: DER OCTET STRING (04 41 04 X Y) or the bare 04 X Y. */
function addressOfPoint(point: Buffer): `0x${string}` {
  const raw = point.length === 67 && point[0] === 0x04 && point[1] === 0x41 ? point.subarray(2) : point;
  if (raw.length !== 65 || raw[0] !== 0x04)
    throw new Error(`the token's public point is not an uncompressed secp256k1 point (${point.length} bytes)`);
  return publicKeyToAddress(`0x${raw.toString("hex")}`);
}

/** r ‖ s from the token, s normalised to the lower half, and the recovery id that gives back `address`. */
export async function ethereumSignature(hash: `0x${string}`, rs: Buffer, address: `0x${string}`): Promise<`0x${string}`> {
  if (rs.length !== 64) throw new Error(`the token's ECDSA signature is ${rs.length} bytes, expected 64 (r ‖ s)`);
  const r = `0x${rs.subarray(0, 32).toString("hex")}` as const;
  let s = BigInt(`0x${rs.subarray(32).toString("hex")}`);
  if (s > HALF_N) s = N - s;
  const sHex = `0x${s.toString(16).padStart(64, "0")}` as const;
  for (const yParity of [0, 1]) {
    const signature = serializeSignature({ r, s: sHex, yParity });
    if ((await recoverAddress({ hash, signature })).toLowerCase() === address.toLowerCase()) return signature;
  }
  throw new Error("the token's signature recovers to neither address (is the key the wallet's?)");
}

/** What a PKCS#11 error says when the session or the token went away: the session is opened again, once per call. */
const SESSION_LOST =
  /CKR_(SESSION_HANDLE_INVALID|SESSION_CLOSED|DEVICE_REMOVED|DEVICE_ERROR|TOKEN_NOT_PRESENT|TOKEN_NOT_RECOGNIZED|USER_NOT_LOGGED_IN|CRYPTOKI_NOT_INITIALIZED|SLOT_ID_INVALID)/;

/** An open, logged-in session on the token with the key pair found in it. */
function attach(p: Pkcs11Module, opts: Pkcs11Options, pin: string) {
  const { lib, session, close } = openSession(p, opts, pin);
  try {
    const privateKey = findKey(p, lib, session, p.CKO_PRIVATE_KEY, opts.keyLabel);
    const publicKey = findKey(p, lib, session, p.CKO_PUBLIC_KEY, opts.keyLabel);
    if (!privateKey || !publicKey)
      throw new Error(
        `wallet.pkcs11.keyLabel: no EC key pair labelled "${opts.keyLabel}" on token "${opts.tokenLabel}" (make one with \`tollgate signer keygen\`)`,
      );
    const [point] = lib.C_GetAttributeValue(session, publicKey, [{ type: p.CKA_EC_POINT }]);
    return { lib, session, close, privateKey, address: addressOfPoint(point!.value as Buffer) };
  } catch (err) {
    close();
    throw err;
  }
}

/**
 * Opens the token and finds the key pair `keyLabel`: a WalletSigner whose signatures the token makes. The session
 * stays open (logged in) until `close()`; signatures are made one at a time on it. When the session or the token goes
 * away (an HSM restarted, a network HSM dropped, every session closed), the next signature opens a new session, logs
 * in again and checks the key is the same wallet's, then signs; while the token cannot be reached each signature
 * fails (the gateway pays nothing) and the next one tries again.
 * @throws Error naming the setting at fault (module, token label, PIN, key label).
 */
export function openPkcs11Signer(opts: Pkcs11Options, pin: string | undefined): WalletSigner {
  if (!pin) throw new Error('TOLLGATE_PKCS11_PIN: required with wallet.signer "pkcs11" (the token\'s user PIN)');
  const p = loadPkcs11js();
  let current: ReturnType<typeof attach> | undefined = attach(p, opts, pin);
  const address = current.address;
  let queue: Promise<unknown> = Promise.resolve();
  let closed = false;
  const signOn = (t: ReturnType<typeof attach>, hash: `0x${string}`) =>
    new Promise<Buffer>((resolve, reject) => {
      t.lib.C_SignInit(t.session, { mechanism: p.CKM_ECDSA }, t.privateKey);
      t.lib.C_Sign(t.session, Buffer.from(hash.slice(2), "hex"), Buffer.alloc(128), (err, sig) => (err ? reject(err) : resolve(sig)));
    });
  /** The session gone: let go of it (its handle may be dead) and open a new one on the same key. */
  const reattach = () => {
    const old = current;
    current = undefined;
    try {
      old?.close();
    } catch {
      /* the session is gone already */
    }
    const next = attach(p, opts, pin);
    if (next.address.toLowerCase() !== address.toLowerCase()) {
      next.close();
      throw new Error(`the PKCS#11 key "${opts.keyLabel}" is now another wallet's (${next.address}); not signing`);
    }
    current = next;
    return next;
  };
  const signOnToken = async (hash: `0x${string}`): Promise<Buffer> => {
    if (closed) throw new Error("the PKCS#11 signer is closed");
    if (!current) return signOn(reattach(), hash);
    try {
      return await signOn(current, hash);
    } catch (err) {
      if (!SESSION_LOST.test(String((err as Error)?.message))) throw err;
      return signOn(reattach(), hash);
    }
  };
  return {
    kind: "pkcs11",
    address,
    async signTypedData(data: TypedData) {
      const hash = hashTypedData(data as unknown as TypedDataDefinition);
      // One operation at a time on the session (C_SignInit … C_Sign must not interleave).
      const rs = (queue = queue.catch(() => {}).then(() => signOnToken(hash))) as Promise<Buffer>;
      return ethereumSignature(hash, await rs, address);
    },
    async close() {
      if (closed) return;
      closed = true;
      await queue.catch(() => {});
      current?.close();
      current = undefined;
    },
  };
}

/**
 * Generates a secp256k1 key pair inside the token (`tollgate signer keygen`): the private half sensitive and not
 * extractable, both on the token (they survive the session). Returns the wallet's address.
 * @throws Error when a key pair with that label exists already (never overwritten).
 */
export function generatePkcs11Key(opts: Pkcs11Options, pin: string | undefined): `0x${string}` {
  if (!pin) throw new Error("TOLLGATE_PKCS11_PIN: required (the token's user PIN)");
  const p = loadPkcs11js();
  const { lib, session, close } = openSession(p, opts, pin);
  try {
    if (findKey(p, lib, session, p.CKO_PRIVATE_KEY, opts.keyLabel) || findKey(p, lib, session, p.CKO_PUBLIC_KEY, opts.keyLabel))
      throw new Error(`a key pair labelled "${opts.keyLabel}" exists on token "${opts.tokenLabel}"; choose another --label`);
    const id = Buffer.from(crypto.getRandomValues(new Uint8Array(16)));
    const common = [
      { type: p.CKA_TOKEN, value: true },
      { type: p.CKA_LABEL, value: opts.keyLabel },
      { type: p.CKA_ID, value: id },
      { type: p.CKA_KEY_TYPE, value: p.CKK_EC },
    ];
    const keys = lib.C_GenerateKeyPair(
      session,
      { mechanism: p.CKM_EC_KEY_PAIR_GEN },
      [
        ...common,
        { type: p.CKA_CLASS, value: p.CKO_PUBLIC_KEY },
        { type: p.CKA_EC_PARAMS, value: SECP256K1_PARAMS },
        { type: p.CKA_VERIFY, value: true },
      ],
      [
        ...common,
        { type: p.CKA_CLASS, value: p.CKO_PRIVATE_KEY },
        { type: p.CKA_PRIVATE, value: true },
        { type: p.CKA_SENSITIVE, value: true },
        { type: p.CKA_EXTRACTABLE, value: false },
        { type: p.CKA_SIGN, value: true },
      ],
    );
    const [point] = lib.C_GetAttributeValue(session, keys.publicKey, [{ type: p.CKA_EC_POINT }]);
    return addressOfPoint(point!.value as Buffer);
  } finally {
    close();
  }
}
