// The managementToken of a paid session: a signed bearer valid 24 h for that one session, and only for managing it.
import { SignJWT, jwtVerify } from "jose";

const AUDIENCE = "x402-session-management";
export const MANAGEMENT_TOKEN_TTL_SECONDS = 24 * 60 * 60;

export async function issueManagementToken(
  secret: Uint8Array,
  sessionId: string,
  now = Date.now(),
): Promise<{ token: string; expiresAt: string }> {
  const exp = Math.floor(now / 1000) + MANAGEMENT_TOKEN_TTL_SECONDS;
  const token = await new SignJWT({ scope: "x402:session" })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(sessionId)
    .setAudience(AUDIENCE)
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(exp)
    .sign(secret);
  return { token, expiresAt: new Date(exp * 1000).toISOString() };
}

export type TokenCheck = { ok: true } | { ok: false; status: 401 | 403; code: string; message: string };

/** Accepts only a live token for exactly this session. */
export async function checkManagementToken(secret: Uint8Array, authorization: string | undefined, sessionId: string): Promise<TokenCheck> {
  const m = authorization ? /^bearer\s+(\S+)\s*$/i.exec(authorization) : null;
  if (!m)
    return {
      ok: false,
      status: 401,
      code: "unauthorized",
      message: "Missing management token: send Authorization: Bearer <managementToken>",
    };
  try {
    const { payload } = await jwtVerify(m[1], secret, { audience: AUDIENCE, algorithms: ["HS256"] });
    if (payload.sub !== sessionId || payload.scope !== "x402:session") {
      return { ok: false, status: 403, code: "forbidden", message: "This management token belongs to another session" };
    }
    return { ok: true };
  } catch (err) {
    const expired = (err as { code?: string })?.code === "ERR_JWT_EXPIRED";
    return {
      ok: false,
      status: 401,
      code: expired ? "token_expired" : "unauthorized",
      message: expired ? "The management token has expired" : "Invalid management token",
    };
  }
}
