// The Worker entry `npm run bench -- state` bundles (wrangler, with wrangler.toml's aliases and Durable Object binding)
// and runs in workerd: the Tollgate Worker and its TollgateState class as deployed, plus one route that measures the
// Durable Object calls per request class on it (test/helpers/durable-round-trips.ts, the harness the workerd test uses).
// POST a RoundTripStack with an optional `runs`; the answer is the figures as JSON, or the error as text with a 500.
import worker from "../src/host/worker.js";
import { durableObjectRoundTrips, type RoundTripStack } from "../test/helpers/durable-round-trips.js";

export { TollgateState } from "../src/host/worker.js";

export default {
  async fetch(request: Request, env: Record<string, unknown>): Promise<Response> {
    const { runs, ...stack } = (await request.json()) as RoundTripStack & { runs?: number };
    try {
      // Every class in this one request: the gateway's stubs and timers belong to the request that made them.
      return Response.json(await durableObjectRoundTrips(worker, env, stack, { runs }));
    } catch (err) {
      return new Response(err instanceof Error ? `${err.name}: ${err.message}` : String(err), { status: 500 });
    }
  },
};
