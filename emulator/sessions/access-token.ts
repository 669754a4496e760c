// The per-session access token carried in `wsEndpoint` (and returned as `token`): an HS256 JWT scoped to one session.
import { SignJWT, jwtVerify } from "jose";

const AUDIENCE = "emulator:browser-session";

export async function issueSessionToken(secret: Uint8Array, sessionId: string, expiresAt: Date): Promise<string> {
  return new SignJWT({})
    .setProtectedHeader({ alg: "HS256" })
    .setSubject(sessionId)
    .setAudience(AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(Math.ceil(expiresAt.getTime() / 1000))
    .sign(secret);
}

/** True only for an unexpired token issued by this emulator for exactly this session. */
export async function verifySessionToken(secret: Uint8Array, sessionId: string, token: string | null | undefined): Promise<boolean> {
  if (!token) return false;
  try {
    const { payload } = await jwtVerify(token, secret, { audience: AUDIENCE, subject: sessionId, algorithms: ["HS256"] });
    return payload.sub === sessionId;
  } catch {
    return false;
  }
}
