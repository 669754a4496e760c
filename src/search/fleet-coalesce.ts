// Coalescing across gateway instances: the first instance to claim a request's key pays and publishes the answer in
// shared state; the others wait for it instead of paying again. It doubles as a cache shared by the fleet.
import type { Context } from "hono";
import type { GatewayServices } from "../services.js";
import { fromBase64 as unb64, toBase64 as b64, type Answer } from "./answer.js";

const LEASE_MS = 60_000;
const POLL_MS = 25;
const STORED_AT = "x-tollgate-stored-at";
/** What the publishing instance paid for the answer (atomic units): what every other use of it saved. */
const PAID = "x-tollgate-paid-atomic";

export interface FleetResult {
  answer: Answer;
  /** True when this instance fetched (and paid for) the answer. */
  fetched: boolean;
}

/**
 * Runs `fetch` once per key across every instance sharing `services.stores`. Answers worth sharing (`share` true) stay
 * published for `ttlMs`; a published answer older than `maxAgeMs` is not used.
 */
export async function fleetCoalesce<E = never>(
  services: GatewayServices,
  key: string,
  opts: {
    ttlMs: number;
    maxAgeMs?: number;
    share: (a: Answer) => boolean;
    context?: Context;
    /**
     * Work started beside the claim so that the claim's round trip is not waited for before it: the upstream's first,
     * unpaid answer (an x402 challenge) and a hold reserved ahead, or a credit call's reservation. Handed to `fetch`
     * when this instance wins the claim at once; given to `drop` otherwise. It must spend nothing that `drop` cannot
     * give back (no call the upstream bills; a reservation is released).
     */
    early?: { start: () => E; drop: (early: E) => void };
  },
  fetch: (early?: E) => Promise<Answer>,
): Promise<FleetResult> {
  const store = services.stores.idempotency;
  const k = `coalesce:${key}`;
  const deadline = services.now() + LEASE_MS;
  let early = opts.early ? { value: opts.early.start() } : undefined;
  // Not used: given back (a body let go, a hold released), behind the request.
  const drop = () => {
    if (early) opts.early!.drop(early.value);
    early = undefined;
  };
  for (;;) {
    let begun: Awaited<ReturnType<typeof store.begin>>;
    try {
      begun = await store.begin(k, key, LEASE_MS);
    } catch (err) {
      drop();
      throw err;
    }
    if (begun.state === "done") {
      const r = begun.response;
      const storedAt = Number(r.headers[STORED_AT] ?? 0);
      if (opts.maxAgeMs !== undefined && services.now() - storedAt > opts.maxAgeMs) {
        // Too old for this client: fetch afresh (with what was started beside the claim: it was for this very call)
        // without replacing what others may still use.
        const started = early?.value;
        early = undefined;
        return { answer: await fetch(started), fetched: true };
      }
      drop();
      const { [STORED_AT]: _, [PAID]: paid, ...headers } = r.headers;
      const cost = /^\d{1,30}$/.test(paid ?? "") ? BigInt(paid!) : 0n;
      return { answer: { status: r.status, headers, body: unb64(r.body), paid: cost, storedAt }, fetched: false };
    }
    if (begun.state === "new") break;
    drop();
    // Another instance is fetching it: wait for its answer (or for its lease to lapse if it died).
    if (services.now() > deadline) return { answer: await fetch(), fetched: true };
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  let answer: Answer;
  try {
    answer = await fetch(early?.value);
  } catch (err) {
    await store.abandon(k).catch(() => {});
    throw err;
  }
  // Published behind the answer: the caller has it now; the fleet sees it a round trip later (an instance waiting on
  // the key polls until then, one dying meanwhile lets the lease lapse as before). Kept alive beside the request.
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
  return { answer, fetched: true };
}
