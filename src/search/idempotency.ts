// Idempotency-Key: a request is paid at most once; repeats within 24 h get the stored answer, concurrent ones wait.
import { GatewayError } from "../errors.js";
import type { GatewayServices } from "../services.js";
import { fromBase64 as unb64, toBase64 as b64, type Answer } from "./answer.js";

const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
const LEASE_MS = 120_000;
const WAIT_MS = 60_000;

function validIdempotencyKey(key: string): boolean {
  return /^[\x21-\x7e]{1,255}$/.test(key);
}

/**
 * Runs `run` once per (tenant, key). A repeat gets the stored answer (`replayed` true); a concurrent repeat waits for
 * the first. `run` signals through `keep` whether its outcome must be remembered even when it failed (money moved or
 * may have): failures before any signature are forgotten so the client can retry.
 */
export async function withIdempotency(
  services: GatewayServices,
  scope: string,
  key: string,
  fingerprint: string,
  run: () => Promise<Answer>,
): Promise<{ answer: Answer; replayed: boolean }> {
  if (!validIdempotencyKey(key))
    throw new GatewayError(400, "invalid_idempotency_key", "Idempotency-Key must be 1-255 visible ASCII characters.");
  const store = services.stores.idempotency;
  const k = `idem:${scope}:${key}`;
  const deadline = services.now() + WAIT_MS;
  for (;;) {
    const begun = await store.begin(k, fingerprint, LEASE_MS);
    if (begun.state === "done") {
      if (begun.response.fingerprint !== fingerprint) {
        throw new GatewayError(422, "idempotency_key_reused", "This Idempotency-Key was already used with a different request body.");
      }
      const r = begun.response;
      return { answer: { status: r.status, headers: r.headers, body: unb64(r.body), paid: 0n, storedAt: 0 }, replayed: true };
    }
    if (begun.state === "new") break;
    if (services.now() > deadline)
      throw new GatewayError(409, "idempotency_in_progress", "A request with this Idempotency-Key is still running; retry shortly.");
    await new Promise((r) => setTimeout(r, 50));
  }
  try {
    const answer = await run();
    await store.complete(k, { status: answer.status, headers: answer.headers, body: b64(answer.body), fingerprint }, IDEMPOTENCY_TTL_MS);
    return { answer, replayed: false };
  } catch (err) {
    if (err instanceof GatewayError && err.code === "payment_outcome_unknown") {
      // The money may have moved: remember the outcome so a retry cannot pay a second time.
      const body = new TextEncoder().encode(JSON.stringify({ message: err.message, code: err.code, ...err.details }));
      await store.complete(
        k,
        { status: err.status, headers: { "content-type": "application/json" }, body: b64(body), fingerprint },
        IDEMPOTENCY_TTL_MS,
      );
    } else {
      await store.abandon(k).catch(() => {});
    }
    throw err;
  }
}
