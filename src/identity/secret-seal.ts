// Tenant secrets sealed at rest (../state/secrets.ts keeps them): AES-256-GCM through Web Crypto, so the same code runs
// on Node and on Workers. The keys come from the gateway's secrets (TOLLGATE_SECRET_KEYS="kid:secret,…", else the
// token secrets): each is stretched with HKDF-SHA256 into its own AES key and its own placeholder key. The first key
// seals; every listed key opens what it sealed (rotation: put the new key first, re-save or leave the old ones listed).
// The sealed value is bound to its tenant and name (the additional data), so a record copied under another tenant or
// name does not open.

/** One sealed value: the key that sealed it, the nonce and the ciphertext with its tag (base64url). */
export interface SealedValue {
  kid: string;
  iv: string;
  ct: string;
}

interface RingKey {
  kid: string;
  aes: CryptoKey;
  placeholder: CryptoKey;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

function b64url(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function unb64url(s: string): Uint8Array<ArrayBuffer> {
  const bin = atob(s.replace(/-/g, "+").replace(/_/g, "/"));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

async function derive(secret: string, info: string, usage: "aes" | "hmac"): Promise<CryptoKey> {
  const base = await crypto.subtle.importKey("raw", enc.encode(secret), "HKDF", false, ["deriveKey"]);
  const params = { name: "HKDF", hash: "SHA-256", salt: enc.encode("tollgate tenant secrets"), info: enc.encode(info) };
  return usage === "aes"
    ? crypto.subtle.deriveKey(params, base, { name: "AES-GCM", length: 256 }, false, ["encrypt", "decrypt"])
    : crypto.subtle.deriveKey(params, base, { name: "HMAC", hash: "SHA-256", length: 256 }, false, ["sign"]);
}

const aad = (tenant: string, name: string) => enc.encode(`${tenant}\n${name}`);

/** The error of a value no listed key opens (its key was removed, or the record was tampered with). */
export class SecretUnreadable extends Error {
  constructor(readonly kid: string) {
    super(`a tenant secret sealed under key "${kid}" cannot be opened: that key is no longer listed in TOLLGATE_SECRET_KEYS`);
  }
}

/** The key ring: seals with the first key, opens with any. */
export class SecretSeal {
  private readonly ring: Promise<RingKey[]>;

  /** @param keys newest first (the first seals); each secret at least 32 characters. */
  constructor(keys: ReadonlyArray<{ kid: string; secret: string }>) {
    if (keys.length === 0) throw new Error("SecretSeal needs at least one key");
    this.ring = Promise.all(
      keys.map(async (k) => ({
        kid: k.kid,
        aes: await derive(k.secret, "seal", "aes"),
        placeholder: await derive(k.secret, "placeholder", "hmac"),
      })),
    );
  }

  /** The id of the key that seals now. */
  async sealingKid(): Promise<string> {
    return (await this.ring)[0]!.kid;
  }

  async seal(tenant: string, name: string, value: string): Promise<SealedValue> {
    const key = (await this.ring)[0]!;
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const ct = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: aad(tenant, name) }, key.aes, enc.encode(value));
    return { kid: key.kid, iv: b64url(iv), ct: b64url(new Uint8Array(ct)) };
  }

  /** @throws SecretUnreadable when no listed key sealed it or it does not open (moved, tampered with). */
  async open(tenant: string, name: string, sealed: SealedValue): Promise<string> {
    const key = (await this.ring).find((k) => k.kid === sealed.kid);
    if (!key) throw new SecretUnreadable(sealed.kid);
    try {
      const pt = await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: unb64url(sealed.iv), additionalData: aad(tenant, name) },
        key.aes,
        unb64url(sealed.ct),
      );
      return dec.decode(pt);
    } catch {
      throw new SecretUnreadable(sealed.kid);
    }
  }

  /**
   * The placeholder a sandbox's processes get for one secret: `tg_sec_` and 32 characters, the same every time for
   * (tenant, sandbox, name) under the sealing key, unguessable without it.
   */
  async placeholder(tenant: string, sandboxId: string, name: string): Promise<string> {
    const key = (await this.ring)[0]!;
    const mac = await crypto.subtle.sign("HMAC", key.placeholder, enc.encode(`${tenant}\n${sandboxId}\n${name}`));
    return `tg_sec_${b64url(new Uint8Array(mac)).slice(0, 32)}`;
  }
}

/** The SHA-256 of a placeholder (what the store keys its binding by: the placeholder itself is never stored). */
export async function placeholderDigest(placeholder: string): Promise<string> {
  return b64url(new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(placeholder))));
}
