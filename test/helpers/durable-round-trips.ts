// Durable Object calls per request class, measured inside workerd: the Worker's state binding is wrapped so that every
// call on a stub is counted and first waits `delay` ms; a class's fastest latency with the delay, less without it,
// divided by the delay is the sequential calls on its critical path (the measure test/state/round-trips.test.ts takes
// on Node). Runs in the Worker's isolate, never in Node: test/workers/round-trips.test.ts asserts on it and
// `npm run bench -- state` prints it (through bench/state-durable-objects.ts), so both read the same figures.

/** The emulator and chain the Worker talks to (on 127.0.0.1), and a funded wallet that pays for it. */
export interface RoundTripStack {
  controlUrl: string;
  runtimeUrl: string;
  apiKey: string;
  network: string;
  asset: string;
  walletKey: string;
  /**
   * The measured tenant's definition without id and keys: the example configuration's (test/helpers/example-tenant.ts,
   * read in Node and handed over); absent, a tenant with a budget alone.
   */
  tenant?: Record<string, unknown>;
}

export interface ClassFigure {
  name: string;
  /** Calls the request waited for: (fastest with the delay − fastest without) / delay, rounded. */
  waited: number;
  /** The same before rounding (noise only adds to a run, so it sits a little above `waited`). */
  ratio: number;
  /** Stub calls per request, those made behind the answer included. */
  calls: number;
  /** The fastest request without the delay and with it, in ms. */
  fastest: [number, number];
  /**
   * Counted, not timed: the fewest, over the delayed requests, of the longest chain of calls each begun after the last
   * ended within the request (calls sent at once count as one); `chain` names the calls of that fewest.
   */
  sequential: number;
  chain: string[];
}

interface WorkerEntry {
  fetch(request: Request, env: any, ctx: any): Response | Promise<Response>;
}

// Short enough that a paid miss comes back within the tenant snapshot's 750 ms (a sparser caller waits for its check).
const DELAY = 80;

async function sha256(s: string) {
  const d = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(s));
  return "sha256:" + [...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** One stub call: the object's name and method, when it began and when it was answered (performance.now()). */
interface TimedCall {
  name: string;
  start: number;
  end: number;
}

/**
 * The longest chain of `calls` each begun at or after the end of the one before: the sequential calls a request made
 * (calls sent at once overlap by the delay). A slow spell of the machine or the upstream only spreads calls apart.
 */
function longestChain(calls: TimedCall[]): string[] {
  const sorted = [...calls].sort((a, b) => a.start - b.start);
  const best: string[][] = [];
  for (const [i, c] of sorted.entries()) {
    let longest: string[] = [];
    for (let j = 0; j < i; j++) if (sorted[j]!.end <= c.start && best[j]!.length > longest.length) longest = best[j]!;
    best.push([...longest, c.name]);
  }
  return best.reduce<string[]>((a, b) => (b.length > a.length ? b : a), []);
}

/** The TOLLGATE_STATE binding with every stub call counted, timed and delayed. */
function delayedNamespace(ns: any) {
  const state = { delay: 0, calls: 0, timed: [] as TimedCall[] };
  const names = new Map<string, string>();
  const wrapped = {
    idFromName: (name: string) => {
      const id = ns.idFromName(name);
      if (names.size < 10_000) names.set(String(id), name.split(":")[0]!);
      return id;
    },
    get(id: unknown, options?: unknown) {
      const stub = options === undefined ? ns.get(id) : ns.get(id, options);
      const object = names.get(String(id)) ?? "object";
      return new Proxy(stub, {
        get(t, prop) {
          const v = Reflect.get(t, prop);
          if (typeof v !== "function" || prop === "then") return v;
          // Called as a method of the stub itself (an RPC stub's properties are remote: `v.apply` would be one).
          return async (...args: unknown[]) => {
            state.calls++;
            const start = performance.now();
            if (state.delay > 0) await new Promise((r) => setTimeout(r, state.delay));
            try {
              return await t[prop](...args);
            } finally {
              if (state.timed.length >= 10_000) state.timed.splice(0, 5_000);
              state.timed.push({ name: `${object}.${String(prop)}`, start, end: performance.now() });
            }
          };
        },
      });
    },
  };
  return { wrapped, state };
}

/**
 * Each class measured on the Worker `worker` with `env`'s state binding wrapped: a paid search hit and miss (x402), a
 * creation (`POST /api/profile`), on a sandbox it creates (and stops) a control read of it and a runtime call with
 * its bound token, then a credit call (`POST /api/web/search`). `runs` requests per class at each delay, fastest kept
 * (the paid miss gets two more: the emulator's chain makes it the noisiest). Throws if a request is not answered 200.
 */
export async function durableObjectRoundTrips(
  worker: WorkerEntry,
  env: Record<string, unknown>,
  stack: RoundTripStack,
  { runs = 3, log = (_line: string) => {} } = {},
): Promise<ClassFigure[]> {
  const key = `tg_worker_${crypto.randomUUID()}`;
  const haltKey = `tg_worker_${crypto.randomUUID()}`;
  const freeKey = `tg_worker_${crypto.randomUUID()}`;
  // The measured tenant with no limit on sandboxes or sessions (its rate limit and other quotas kept: they cost calls too).
  const { maxSandboxes: _s, maxSessions: _x, ...otherQuotas } = (stack.tenant?.quotas ?? {}) as Record<string, unknown>;
  const unlimited = { ...stack.tenant, quotas: otherQuotas };
  const runtimePort = new URL(stack.runtimeUrl).port;
  const { wrapped, state } = delayedNamespace(env.TOLLGATE_STATE);
  const e = {
    ...env,
    TOLLGATE_STATE: wrapped,
    TOLLGATE_CONFIG: JSON.stringify({
      server: { logLevel: "error", publicOrigin: "https://gateway.test" },
      upstream: { baseUrl: stack.controlUrl, allowedHosts: [new URL(stack.runtimeUrl).host, `localhost:${runtimePort}`] },
      payments: { networks: [stack.network], assets: [stack.asset], maxPerRequest: "0.50" },
      cache: { enabled: true },
      state: { backend: "durable-objects" },
      tenants: [
        {
          ...(stack.tenant ?? { budget: { daily: "100.00" } }),
          id: `rt-${crypto.randomUUID().slice(0, 8)}`,
          keys: [{ hash: await sha256(key) }],
        },
        // Stopped when a window runs out: its paid calls also check the exhausted marks (a kv object).
        {
          id: `halt-${crypto.randomUUID().slice(0, 8)}`,
          keys: [{ hash: await sha256(haltKey) }],
          budget: { daily: "100.00", monthly: "500.00" },
          onExhausted: "stop",
        },
        // The measured tenant without its creation quotas: what a sandbox creation costs of its own.
        { ...unlimited, id: `free-${crypto.randomUUID().slice(0, 8)}`, keys: [{ hash: await sha256(freeKey) }] },
      ],
    }),
    TOLLGATE_UPSTREAM_API_KEY: stack.apiKey,
    TOLLGATE_WALLET_KEY: stack.walletKey,
    TOLLGATE_TOKEN_SECRET: "d".repeat(40),
  };
  const ctx = { waitUntil() {}, passThroughOnException() {} };
  const send = (path: string, method: string, body?: unknown, headers: Record<string, string> = { "x-api-key": key }) =>
    worker.fetch(
      new Request(`https://gateway.test${path}`, {
        method,
        headers: body === undefined ? headers : { ...headers, "content-type": "application/json" },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
      e,
      ctx,
    );
  const call = async (path: string, body?: unknown, headers?: Record<string, string>, status = 200) => {
    const r = await send(path, body === undefined ? "GET" : "POST", body, headers);
    const text = await r.text();
    if (r.status !== status) throw new Error(`${path}: status ${r.status}: ${text.slice(0, 200)}`);
    return text;
  };
  const figures: ClassFigure[] = [];
  /** `run` may return the milliseconds to count (a part of what it does), a number; anything else: all of it. */
  const measure = async (name: string, run: (i: number) => Promise<unknown>, n = runs) => {
    const chains: string[][] = [];
    const timed = async (i: number) => {
      const t = performance.now();
      const own = await run(i);
      const ms = typeof own === "number" ? own : performance.now() - t;
      if (state.delay > 0) chains.push(longestChain(state.timed.filter((c) => c.start >= t && c.end <= t + ms)));
      await new Promise((r) => setTimeout(r, 10));
      return ms;
    };
    state.delay = 0;
    for (let i = 0; i < 2; i++) await timed(1000 + i);
    // Without and with the delay in turn, so a slow spell of the shared machine (or of the emulator's chain, which a
    // paid call waits for) falls on both sides rather than on one.
    const calls0 = state.calls;
    const near: number[] = [];
    const far: number[] = [];
    for (let i = 0; i < n; i++) {
      state.delay = 0;
      near.push(await timed(i));
      state.delay = DELAY;
      far.push(await timed(100 + i));
    }
    state.delay = 0;
    // The last request's calls behind its answer, let through undelayed.
    await new Promise((r) => setTimeout(r, 200));
    const calls = (state.calls - calls0) / (2 * n);
    const fastest: [number, number] = [Math.min(...near), Math.min(...far)];
    const ratio = (fastest[1] - fastest[0]) / DELAY;
    const chain = chains.reduce((a, b) => (b.length < a.length ? b : a));
    const figure = { name, waited: Math.max(0, Math.round(ratio)), ratio, calls, fastest, sequential: chain.length, chain };
    log(
      `durable objects ${name}: ${figure.waited} waited for (${ratio.toFixed(2)}), ${chain.length} sequential (${chain.join(" → ") || "none"}), ${calls.toFixed(1)} calls per request (with those behind the answer); fastest ${fastest.map((ms) => ms.toFixed(0)).join(" → ")} ms`,
    );
    figures.push(figure);
  };

  await measure("paid search hit", () => call("/x402/web/search", { query: "the same query" }));
  const salt = crypto.randomUUID().slice(0, 8);
  await measure("paid search miss", (i) => call("/x402/web/search", { query: `miss ${salt} ${i}` }), runs + 2);
  // A keyless token with a spend cap, of the tenant stopped when its budget runs out: the cap's ledger object, the
  // exhausted marks and the tenant's ledger object are called at once.
  const minted = JSON.parse(
    await call("/_tollgate/tokens", { kind: "search", cap: "10.00", ttlSeconds: 600 }, { "x-api-key": haltKey }, 201),
  ) as {
    token: string;
  };
  await measure(
    "paid search miss (capped token, stop tenant)",
    (i) => call("/x402/web/search", { query: `capped ${salt} ${i}` }, { authorization: `Bearer ${minted.token}` }),
    runs + 2,
  );
  await measure("creation (profile)", (i) => call("/api/profile", { name: `rt-${salt}-${i}` }));
  // A sandbox, timed to its answer and stopped after (untimed, so the quota's slots never run out): with the measured
  // tenant's quota (the example's: 5 sandboxes, counted in the creation's claim) and without it.
  const createStopped = (apiKey: string) => async () => {
    const t = performance.now();
    const made = JSON.parse(await call("/api/sandbox", { imageName: "node" }, { "x-api-key": apiKey })) as { id: string };
    const ms = performance.now() - t;
    await send(`/api/sandbox/${made.id}/stop`, "PUT", undefined, { "x-api-key": apiKey });
    // The stop's settlement reads its entry again 2 s later (src/payments/settle.ts): past before the next creation,
    // whose calls it would otherwise join. Then a request, so the next creation's caller is a steady one (a sparse
    // caller, back after 750 ms, waits for the tenant snapshot's check too, as in every class).
    await new Promise((r) => setTimeout(r, 2_500));
    await call("/_tollgate/whoami", undefined, { "x-api-key": apiKey });
    return ms;
  };
  // Three a side: a sandbox is slow to make, and what is held to a figure is its calls, not its time.
  await measure("creation (sandbox, no quota)", createStopped(freeKey), Math.min(runs, 3));
  await measure("creation (sandbox)", createStopped(key), Math.min(runs, 3));
  const sbx = JSON.parse(await call("/api/sandbox", { imageName: "node" })) as { id: string; token: string };
  try {
    await measure("control read", () => call(`/api/sandbox/${sbx.id}`));
    const auth = { authorization: `Bearer ${sbx.token}` };
    // A file stat, not an exec: an exec spawns a process, which on a loaded host took long enough (over 250 ms) that
    // the caller stopped being steady and waited for the revocation count's reread (as test/state/round-trips.test.ts).
    await measure("runtime call (bound token)", () => call(`/sandbox/${sbx.id}/files/stat?path=/`, undefined, auth));
  } finally {
    await send(`/api/sandbox/${sbx.id}/stop`, "PUT");
  }
  // Last: the work it leaves behind its answer (the settlement) is still under way when its measure ends.
  await measure("credit call", (i) => call("/api/web/search", { query: `credit ${salt} ${i}` }));
  return figures;
}
