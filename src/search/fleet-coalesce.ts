// Coalescing across gateway instances: the first instance to claim a request's key pays and publishes the answer in
// shared state; the others wait for it instead of paying again. It doubles as a cache shared by the fleet. The claim
// is handed to the money side's entry (src/payments/index.ts, `claim`), which asks it once, beside the call's early
// part, and answers the paid call or the answer found here; the search then finishes the claim with what it fetched.
import type { Context } from "hono";
import type { GatewayServices } from "../services.js";
import { fromBase64 as unb64, toBase64 as b64, type Answer } from "./answer.js";

const LEASE_MS = 60_000;
const POLL_MS = 25;
const STORED_AT = "x-tollgate-stored-at";
/** What the publishing instance paid for the answer (atomic units): what every other use of it saved. */
const PAID = "x-tollgate-paid-atomic";

/** A turn of the claim, as the money side's `ClaimTurn<Answer>` reads it. */
type Turn = { send: true } | { answer: Answer } | { wait: () => Promise<{ send: true } | { answer: Answer }> };

export interface FleetClaim {
  /** Claims the key once: send (this instance fetches), another instance's answer, or wait for the one at it. */
  turn(): Promise<Turn>;
  /** This instance fetched `answer`: published for the fleet when worth sharing, else the claim let go. */
  done(answer: Answer): void;
  /** Fetching failed: the claim let go (another instance may claim it at once). */
  failed(): Promise<void>;
}

/**
 * The claim on `key` across every instance sharing `services.stores`. Answers worth sharing (`share` true) stay
 * published for `ttlMs`; a published answer older than `maxAgeMs` is not used (this instance fetches afresh without
 * replacing it).
 */
export function fleetClaim(
  services: GatewayServices,
  key: string,
  opts: { ttlMs: number; maxAgeMs?: number; share: (a: Answer) => boolean; context?: Context },
): FleetClaim {
  const store = services.stores.idempotency;
  const k = `coalesce:${key}`;
  const deadline = services.now() + LEASE_MS;
  /** Whether this instance holds the claim (it then publishes or lets go). */
  let held = false;

  /** One look: the key claimed now, published already (fresh enough or not), or being fetched elsewhere. */
  const look = async (): Promise<{ send: true } | { answer: Answer } | { pending: true }> => {
    const begun = await store.begin(k, key, LEASE_MS);
    if (begun.state === "new") {
      held = true;
      return { send: true };
    }
    if (begun.state !== "done") return { pending: true };
    const r = begun.response;
    const storedAt = Number(r.headers[STORED_AT] ?? 0);
    // Too old for this client: fetched afresh, without replacing what others may still use.
    if (opts.maxAgeMs !== undefined && services.now() - storedAt > opts.maxAgeMs) return { send: true };
    const { [STORED_AT]: _, [PAID]: paid, ...headers } = r.headers;
    const cost = /^\d{1,30}$/.test(paid ?? "") ? BigInt(paid!) : 0n;
    return { answer: { status: r.status, headers, body: unb64(r.body), paid: cost, storedAt } };
  };

  /** Another instance is fetching it: its answer, or (its lease lapsed, it died) this instance's turn. */
  const wait = async (): Promise<{ send: true } | { answer: Answer }> => {
    for (;;) {
      if (services.now() > deadline) return { send: true };
      await new Promise((r) => setTimeout(r, POLL_MS));
      const seen = await look();
      if (!("pending" in seen)) return seen;
    }
  };

  return {
    turn: async () => {
      const seen = await look();
      return "pending" in seen ? { wait } : seen;
    },
    done: (answer) => {
      if (!held) return;
      held = false;
      // Published behind the answer: the caller has it now; the fleet sees it a round trip later (an instance waiting
      // on the key polls until then, one dying meanwhile lets the lease lapse as before). Kept alive beside the request.
      if (opts.share(answer) && opts.ttlMs > 0) {
        const publish = store
          .complete(
            k,
            {
              status: answer.status,
              headers: { ...answer.headers, [STORED_AT]: String(answer.storedAt), [PAID]: String(answer.paid) },
              body: b64(answer.body),
              fingerprint: key,
            },
            opts.ttlMs,
          )
          .catch(() => store.abandon(k).catch(() => {}));
        services.background(opts.context, publish, "publish a coalesced answer");
      } else {
        services.background(
          opts.context,
          store.abandon(k).catch(() => {}),
          "release a coalescing claim",
        );
      }
    },
    failed: async () => {
      if (!held) return;
      held = false;
      await store.abandon(k).catch(() => {});
    },
  };
}
