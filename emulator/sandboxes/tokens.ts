// Short-lived HS256 tokens the emulator signs: sandbox runtime tokens, presigned file URLs, exposed-port grants and image uploads.
import { SignJWT, jwtVerify } from "jose";
import { randomBytes } from "node:crypto";
import { ApiError } from "./errors.js";

export type TokenKind = "runtime" | "presign" | "port-grant" | "port-cookie" | "image-upload" | "image-blob";

export interface TokenClaims {
  sub: string;
  kind: TokenKind;
  jti?: string;
  exp: number;
  [k: string]: unknown;
}

export class TokenIssuer {
  constructor(
    private readonly secret: Uint8Array,
    private readonly issuer = "tollgate-emulator",
  ) {}

  /** Signs a token of `kind` for sandbox `sub`, valid `ttlSeconds` (fractions allowed). Returns token and expiry (ms). */
  async sign(kind: TokenKind, sub: string, ttlSeconds: number, extra: Record<string, unknown> = {}) {
    const expMs = Date.now() + Math.max(1, Math.round(ttlSeconds * 1000));
    const token = await new SignJWT({ ...extra, kind })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(sub)
      .setIssuer(this.issuer)
      .setIssuedAt()
      .setJti(randomBytes(12).toString("base64url"))
      .setExpirationTime(Math.floor(expMs / 1000))
      .sign(this.secret);
    return { token, expiresAt: expMs };
  }

  /** Verifies signature, kind, subject and expiry; any failure is a 401 with a reason the caller can act on. */
  async verify(token: string | undefined, kind: TokenKind, sub?: string): Promise<TokenClaims> {
    if (!token) throw new ApiError(401, "unauthorized", "Missing runtime token");
    try {
      const { payload } = await jwtVerify(token, this.secret, { issuer: this.issuer, algorithms: ["HS256"] });
      if (payload.kind !== kind) throw new Error("wrong token kind");
      if (sub !== undefined && payload.sub !== sub) throw new Error("token is for another sandbox");
      return payload as unknown as TokenClaims;
    } catch (err) {
      const expired = (err as { code?: string })?.code === "ERR_JWT_EXPIRED";
      throw new ApiError(401, expired ? "token_expired" : "unauthorized", expired ? "Runtime token expired" : "Invalid runtime token");
    }
  }
}

export function bearer(headers: Headers): string | undefined {
  const auth = headers.get("authorization");
  if (!auth || !/^bearer\s+/i.test(auth)) return undefined;
  return auth.replace(/^bearer\s+/i, "").trim() || undefined;
}
